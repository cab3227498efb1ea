package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The columns' limits: orders.item is varchar(255) (characters), quantity an
// int; order_requests.idempotency_key is varchar(128) of visible ASCII.
const (
	maxItemLength     = 255
	maxQuantity       = math.MaxInt32
	maxKeyLength      = 128
	idempotencyHeader = "Idempotency-Key"
	orderExample      = `{"item":"book","quantity":1}`
)

// requestError is a refusal of the client's input: the status, the field at
// fault ("" for the body as a whole) and what to send instead.
type requestError struct {
	status  int
	field   string
	message string
}

func badField(field, format string, args ...any) *requestError {
	return &requestError{status: http.StatusBadRequest, field: field, message: fmt.Sprintf(format, args...)}
}

// orderRequest is a validated POST /orders body.
type orderRequest struct {
	Item     string
	Quantity int
}

// decodeOrder reads exactly one JSON object with the known fields and checks
// each against its column, so nothing the database would refuse reaches it.
func decodeOrder(body io.Reader, maxBody int64) (orderRequest, *requestError) {
	var raw struct {
		Item     *string         `json:"item"`
		Quantity json.RawMessage `json:"quantity"`
	}
	decoder := json.NewDecoder(body)
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(&raw); err != nil {
		return orderRequest{}, decodeProblem(err, maxBody)
	}
	if _, err := decoder.Token(); !errors.Is(err, io.EOF) {
		if problem := readProblem(err, maxBody); problem != nil {
			return orderRequest{}, problem
		}
		return orderRequest{}, badField("", "the body has data after the JSON object; send exactly one object like %s", orderExample)
	}

	if raw.Item == nil {
		return orderRequest{}, badField("item", "item is required, a string of 1 to %d characters", maxItemLength)
	}
	item := strings.TrimSpace(*raw.Item)
	if item == "" {
		return orderRequest{}, badField("item", "item must not be empty")
	}
	if n := utf8.RuneCountInString(item); n > maxItemLength {
		return orderRequest{}, badField("item", "item must be at most %d characters, got %d", maxItemLength, n)
	}

	text := string(raw.Quantity)
	if text == "" || text == "null" {
		return orderRequest{}, badField("quantity", "quantity is required, a whole number from 1 to %d", maxQuantity)
	}
	if text[0] != '-' && (text[0] < '0' || text[0] > '9') {
		return orderRequest{}, badField("quantity", "quantity must be a number, not %s", jsonKind(text[0]))
	}
	quantity, err := strconv.ParseInt(text, 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange) && text[0] != '-', err == nil && quantity > maxQuantity:
		return orderRequest{}, badField("quantity", "quantity must be at most %d", maxQuantity)
	case err != nil && !errors.Is(err, strconv.ErrRange):
		return orderRequest{}, badField("quantity", "quantity must be a whole number, got %s", truncate(text, 32))
	case err != nil || quantity < 1:
		return orderRequest{}, badField("quantity", "quantity must be positive, got %s", truncate(text, 32))
	}
	return orderRequest{Item: item, Quantity: int(quantity)}, nil
}

// decodeProblem explains why the body is not one object with the known fields.
func decodeProblem(err error, maxBody int64) *requestError {
	if problem := readProblem(err, maxBody); problem != nil {
		return problem
	}
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.Is(err, io.EOF):
		return badField("", "the body is empty; send a JSON object like %s", orderExample)
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return badField(typeErr.Field, "%s must be a %s, not a JSON %s", typeErr.Field, typeErr.Type.Kind(), typeErr.Value)
	case errors.As(err, &typeErr):
		return badField("", "the body must be a JSON object like %s, not a JSON %s", orderExample, typeErr.Value)
	case errors.As(err, &syntaxErr):
		return badField("", "the body is not valid JSON (at byte %d); send an object like %s", syntaxErr.Offset, orderExample)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badField("", "the body ends inside the JSON object; send an object like %s", orderExample)
	}
	// encoding/json names an unknown field only in its text.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		field, _ := strconv.Unquote(name)
		return badField(field, "unknown field %s; an order has only item and quantity", name)
	}
	return badField("", "the body must be a JSON object like %s", orderExample)
}

// readProblem reports a body that could not be read: too large, or too slow.
func readProblem(err error, maxBody int64) *requestError {
	var tooLarge *http.MaxBytesError
	var netErr net.Error
	switch {
	case errors.As(err, &tooLarge):
		return &requestError{status: http.StatusRequestEntityTooLarge, message: fmt.Sprintf("the body is larger than %d bytes", maxBody)}
	case errors.As(err, &netErr) && netErr.Timeout():
		return &requestError{status: http.StatusRequestTimeout, message: "the body did not arrive within the server's read timeout"}
	}
	return nil
}

// idempotencyKey returns the request's Idempotency-Key ("" when absent), or a
// 400 when it is repeated, empty, too long or not visible ASCII.
func idempotencyKey(header http.Header) (string, *requestError) {
	values := header.Values(idempotencyHeader)
	if len(values) == 0 {
		return "", nil
	}
	if len(values) > 1 {
		return "", badField(idempotencyHeader, "send one %s header, not %d", idempotencyHeader, len(values))
	}
	key := values[0]
	if key == "" || len(key) > maxKeyLength {
		return "", badField(idempotencyHeader, "%s must be 1 to %d characters, got %d", idempotencyHeader, maxKeyLength, len(key))
	}
	for i := range len(key) {
		if key[i] < 0x21 || key[i] > 0x7e {
			return "", badField(idempotencyHeader, "%s must be visible ASCII characters (a UUID is a good key)", idempotencyHeader)
		}
	}
	return key, nil
}

func jsonKind(first byte) string {
	switch first {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	}
	return "that"
}

func truncate(text string, n int) string {
	if len(text) <= n {
		return text
	}
	return text[:n] + "..."
}
