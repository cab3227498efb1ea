package serialization

import (
	stdjson "encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// wideOrder has a field of each kind a message type commonly holds, so the
// differential test below covers how each is read and written.
type wideOrder struct {
	OrderID int
	Note    string
	Amount  float64
	Paid    bool
	Tags    []string
	Extra   map[string]any
	Inner   *wideLine
	Lines   []wideLine
	Number  stdjson.Number
	Raw     stdjson.RawMessage
	At      time.Time
	Count   uint8
	Any     any
	Quoted  int `json:",string"`
}

type wideLine struct {
	SKU  int     `json:"sku"`
	Memo *string `json:"memo,omitempty"`
}

// FuzzJSONMatchesEncodingJSON: the default codec accepts exactly the payloads
// encoding/json accepts, decodes them to the same values, and writes those
// values as the same bytes, for every target type. A payload one of them
// would take and the other refuse would be a message handled by one service
// and set aside by another.
func FuzzJSONMatchesEncodingJSON(f *testing.F) {
	for _, seed := range []string{
		``, `{}`, `null`, `{"OrderID":1}`, `{"orderid":2,"ORDERID":3}`, `[1,2`, "\xff\xfe", `{"Note":"\u0000"}`, `1e999`,
		`{"Note":"\ud800"}`, `{"Number":12.5e3,"Raw":{"x":[1]},"At":"2026-01-02T03:04:05Z","Count":300}`, `{"Quoted":"12"}`,
		`{"Any":[{"a":1.5}]}`, `{"Extra":{"a":null,"b":"\xff"}}`, `{"Lines":[{"sku":1},{"memo":"x"}]} `, `{"Inner":{"sku":"1"}}`,
		`"x" "y"`, `{"OrderID":1}}`, `{"Note":"<&>\u2028"}`, `{"Amount":-0.0,"Paid":true,"Tags":null}`, `[1,2,3]`, `"text"`, `255`, `256`,
	} {
		f.Add([]byte(seed))
	}
	targets := []reflect.Type{
		reflect.TypeOf(wideOrder{}), reflect.TypeOf(&wideOrder{}), reflect.TypeOf(orderPlaced{}), reflect.TypeOf(map[string]any{}),
		reflect.TypeOf([]int{}), reflect.TypeOf(""), reflect.TypeOf((*any)(nil)).Elem(), reflect.TypeOf(uint8(0)),
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		for _, target := range targets {
			ours, theirs := reflect.New(target), reflect.New(target)
			errOurs := JSON{}.Deserialize(payload, ours.Interface())
			errTheirs := stdjson.Unmarshal(payload, theirs.Interface())
			if (errOurs == nil) != (errTheirs == nil) {
				t.Fatalf("%s from %q: the codec says %v, encoding/json says %v", target, payload, errOurs, errTheirs)
			}
			if errOurs != nil {
				if !errors.Is(errOurs, errTheirs) && !strings.HasSuffix(errOurs.Error(), ": "+errTheirs.Error()) {
					t.Fatalf("%s from %q: the codec's error %q does not carry encoding/json's %q", target, payload, errOurs, errTheirs)
				}
				continue
			}
			if !reflect.DeepEqual(ours.Interface(), theirs.Interface()) {
				t.Fatalf("%s from %q: the codec reads %#v, encoding/json reads %#v", target, payload, ours.Elem().Interface(), theirs.Elem().Interface())
			}
			written, errOurs := JSON{}.Serialize(theirs.Elem().Interface())
			want, errTheirs := stdjson.Marshal(theirs.Elem().Interface())
			if (errOurs == nil) != (errTheirs == nil) || string(written) != string(want) {
				t.Fatalf("%s from %q: the codec writes %s (%v), encoding/json writes %s (%v)", target, payload, written, errOurs, want, errTheirs)
			}
			framed, errFramed := JSON{}.SerializeFramed("\xac\x01\x00", theirs.Elem().Interface())
			if (errFramed == nil) != (errOurs == nil) || errOurs == nil && string(framed) != "\xac\x01\x00"+string(written) {
				t.Fatalf("%s from %q: framed, the codec writes %q (%v), not the frame and %s", target, payload, framed, errFramed, written)
			}
		}
	})
}

// The codec refuses a target encoding/json cannot decode into, instead of
// panicking or writing nowhere.
func TestJSONRefusesATargetThatIsNotAPointer(t *testing.T) {
	for _, target := range []any{nil, orderPlaced{}, (*orderPlaced)(nil)} {
		if err := (JSON{}).Deserialize([]byte(`{"OrderID":1}`), target); err == nil {
			t.Errorf("Deserialize into %T succeeded; want an error", target)
		}
	}
}

// A message that does not decode, or cannot be encoded, fails with
// encoding/json's own error, which a caller can inspect with errors.As.
func TestJSONFailsWithEncodingJSONsErrors(t *testing.T) {
	var syntax *stdjson.SyntaxError
	if err := (JSON{}).Deserialize([]byte(`not json`), &orderPlaced{}); !errors.As(err, &syntax) {
		t.Errorf("Deserialize of `not json`: %v; want a *json.SyntaxError", err)
	}
	var mistyped *stdjson.UnmarshalTypeError
	var target wideOrder
	if err := (JSON{}).Deserialize([]byte(`{"OrderID":"one"}`), &target); !errors.As(err, &mistyped) {
		t.Errorf("Deserialize of a string into an int: %v; want a *json.UnmarshalTypeError", err)
	}
	var unsupported *stdjson.UnsupportedValueError
	if _, err := (JSON{}).Serialize(math.NaN()); !errors.As(err, &unsupported) {
		t.Errorf("Serialize(NaN): %v; want a *json.UnsupportedValueError", err)
	}
	if framed, err := (JSON{}).SerializeFramed("\xac\x01\x00", math.NaN()); framed != nil || !errors.As(err, &unsupported) {
		t.Errorf("SerializeFramed(NaN): %q, %v; want nothing and a *json.UnsupportedValueError", framed, err)
	}
}
