package main

import (
	"bytes"
	stdio "io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
)

func TestRequestFixture(t *testing.T) {
	gunit.Run(new(RequestFixture), t)
}

type RequestFixture struct {
	*gunit.Fixture
}

func (f *RequestFixture) decode(body string) (orderRequest, *requestError) {
	return decodeOrder(http.MaxBytesReader(nil, stdio.NopCloser(strings.NewReader(body)), 1<<10), 1<<10)
}

func (f *RequestFixture) refused(body string, status int, field, message string) {
	_, problem := f.decode(body)
	if !f.So(problem, should.NotBeNil) {
		return
	}
	f.So(problem.status, should.Equal, status)
	f.So(problem.field, should.Equal, field)
	f.So(problem.message, should.ContainSubstring, message)
}

func (f *RequestFixture) TestAValidOrder() {
	request, problem := f.decode(" {\"item\":\"  book \",\"quantity\":2147483647}\n\t ")
	f.So(problem, should.BeNil)
	f.So(request, should.Equal, orderRequest{Item: "book", Quantity: 2147483647})
}

func (f *RequestFixture) TestQuantityMustBeAPositiveIntegerThatFitsTheColumn() {
	f.refused(`{"item":"book","quantity":2147483648}`, 400, "quantity", "at most 2147483647")
	f.refused(`{"item":"book","quantity":99999999999999999999999}`, 400, "quantity", "at most 2147483647")
	f.refused(`{"item":"book","quantity":0}`, 400, "quantity", "positive")
	f.refused(`{"item":"book","quantity":-1}`, 400, "quantity", "positive")
	f.refused(`{"item":"book","quantity":-99999999999999999999999}`, 400, "quantity", "positive")
	f.refused(`{"item":"book","quantity":1.5}`, 400, "quantity", "whole number")
	f.refused(`{"item":"book","quantity":1e3}`, 400, "quantity", "whole number")
	f.refused(`{"item":"book","quantity":"3"}`, 400, "quantity", "not a string")
	f.refused(`{"item":"book","quantity":true}`, 400, "quantity", "not a boolean")
	f.refused(`{"item":"book"}`, 400, "quantity", "required")
	f.refused(`{"item":"book","quantity":null}`, 400, "quantity", "required")
}

func (f *RequestFixture) TestItemMustBeNonEmptyAndFitTheColumn() {
	request, problem := f.decode(`{"item":"` + strings.Repeat("€", 255) + `","quantity":1}`)
	f.So(problem, should.BeNil)
	f.So(request.Item, should.Equal, strings.Repeat("€", 255))
	f.refused(`{"item":"`+strings.Repeat("€", 256)+`","quantity":1}`, 400, "item", "at most 255 characters, got 256")
	f.refused(`{"item":"   ","quantity":1}`, 400, "item", "must not be empty")
	f.refused(`{"quantity":1}`, 400, "item", "required")
	f.refused(`{"item":7,"quantity":1}`, 400, "item", "must be a string")
}

func (f *RequestFixture) TestOneObjectWithTheKnownFieldsOnly() {
	f.refused(`{"item":"book","quantity":1,"price":3}`, 400, "price", "unknown field")
	f.refused(`{"item":"book","quantity":1}{"item":"lamp","quantity":1}`, 400, "", "data after the JSON object")
	f.refused(`{"item":"book","quantity":1} x`, 400, "", "data after the JSON object")
	f.refused(`{"item":"book","quantity":1}]`, 400, "", "data after the JSON object")
	f.refused(``, 400, "", "empty")
	f.refused(`[1]`, 400, "", "must be a JSON object")
	f.refused(`{"item":"book",`, 400, "", "ends inside")
	f.refused(`{"item" "book"}`, 400, "", "not valid JSON")
}

func (f *RequestFixture) TestABodyOverTheLimitIs413() {
	f.refused(`{"item":"`+strings.Repeat("a", 2<<10)+`","quantity":1}`, 413, "", "larger than 1024 bytes")
	f.refused(`{"item":"book","quantity":1}`+strings.Repeat(" ", 2<<10)+"x", 413, "", "larger than 1024 bytes")
}

func (f *RequestFixture) TestIdempotencyKey() {
	header := http.Header{}
	key, problem := idempotencyKey(header)
	f.So(key, should.BeEmpty)
	f.So(problem, should.BeNil)

	header.Set(idempotencyHeader, strings.Repeat("k", 128))
	key, problem = idempotencyKey(header)
	f.So(key, should.HaveLength, 128)
	f.So(problem, should.BeNil)

	for _, bad := range []string{"", strings.Repeat("k", 129), "has space", "caf\u00e9"} {
		header.Set(idempotencyHeader, bad)
		_, problem = idempotencyKey(header)
		if f.So(problem, should.NotBeNil) {
			f.So(problem.status, should.Equal, 400)
			f.So(problem.field, should.Equal, idempotencyHeader)
		}
	}
	header.Set(idempotencyHeader, "a")
	header.Add(idempotencyHeader, "b")
	_, problem = idempotencyKey(header)
	f.So(problem, should.NotBeNil)
}

// The passwords below hold '#', '@' and ':'; no piece of them may be printed.
const (
	secretPassword = "Pw#Tok@en:Zz"
	secretEncoded  = "Pw%23Tok%40en%3AZz"
)

var secretPieces = []string{secretPassword, secretEncoded, "Pw#", "Tok@", "@en:", "en:Zz", "%3AZz"}

// reporter is what assertNoSecret needs of a *testing.T or a gunit fixture.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

func assertNoSecret(t reporter, where, text string) {
	t.Helper()
	for _, piece := range secretPieces {
		if strings.Contains(text, piece) {
			t.Errorf("%s holds %q of the password:\n%s", where, piece, text)
		}
	}
}

func (f *RequestFixture) TestLogLinesAreRedactedWhateverCarriesTheAddress() {
	amqpURL := "amqp://guest:" + secretEncoded + "@127.0.0.1:5672/"
	dsn := "root:" + secretPassword + "@tcp(127.0.0.1:3306)/test"
	var out bytes.Buffer
	logger := slog.New(newRedactingHandler(slog.NewTextHandler(&out, nil), amqpURL, dsn))
	logger = logger.With("amqp", amqpURL)
	logger.WithGroup("g").Warn("dial "+dsn+" failed",
		"error", errorString("connect to "+amqpURL+" with "+secretPassword),
		slog.Group("nested", "dsn", dsn))
	driverLogger{logger: logger}.Print("packets.go: ", dsn)
	assertNoSecret(f.T(), "the log", out.String())
	f.So(out.String(), should.ContainSubstring, "root:xxxxx@tcp(127.0.0.1:3306)/test")
	f.So(out.String(), should.ContainSubstring, "MySQL driver")
}

type errorString string

func (e errorString) Error() string { return string(e) }

func (f *RequestFixture) TestMalformedAddressesAreRefusedWithoutQuotingThePassword() {
	for _, s := range []settings{
		{amqp: "amqp://guest:" + secretPassword + "@127.0.0.1:5672/", dsn: "root@tcp(127.0.0.1:3306)/test"},
		{amqp: "amqp://guest:guest@127.0.0.1:5672/", dsn: "root:" + secretPassword + "@tcp(127.0.0.1:3306/test"},
		{amqp: "amqp://guest:guest@127.0.0.1:5672/", dsn: "root:" + secretPassword + "@tcp(127.0.0.1:3306)test"},
	} {
		err := checkAddresses(s)
		if f.So(err, should.NotBeNil) {
			assertNoSecret(f.T(), "the error", err.Error())
			f.So(err.Error(), should.ContainSubstring, ":xxxxx@")
		}
	}
	f.So(checkAddresses(settings{amqp: "amqp://guest:" + secretEncoded + "@127.0.0.1:5672/", dsn: "root:" + secretPassword + "@tcp(127.0.0.1:3306)/test"}), should.BeNil)
	f.So(checkAddresses(settings{amqp: "http://guest:" + secretEncoded + "@127.0.0.1:5672/", dsn: "root@tcp(127.0.0.1:3306)/test"}).Error(),
		should.ContainSubstring, "scheme")
}
