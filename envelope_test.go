package messaging

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
)

func TestEnvelopeFixture(t *testing.T) {
	gunit.Run(new(EnvelopeFixture), t)
}

type EnvelopeFixture struct {
	*gunit.Fixture
}

// notEnvelope are the fields Dispatch and Delivery share that are not what a
// message says about itself: where it goes, and what it carries.
var notEnvelope = []string{"Topic", "RoutingKey", "Headers", "Payload", "Message"}

func fieldTypes(value any) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	t := reflect.TypeOf(value)
	for i := range t.NumField() {
		fields[t.Field(i).Name] = t.Field(i).Type
	}
	return fields
}

// TestEnvelopeIsExactlyWhatDispatchAndDeliveryShare fails when a field is
// added to both structs but not to Envelope, or to Envelope but not to both.
func (f *EnvelopeFixture) TestEnvelopeIsExactlyWhatDispatchAndDeliveryShare() {
	dispatch, delivery, envelope := fieldTypes(Dispatch{}), fieldTypes(Delivery{}), fieldTypes(Envelope{})
	var shared []string
	for name, kind := range dispatch {
		if delivery[name] == kind && !slices.Contains(notEnvelope, name) {
			shared = append(shared, name)
		}
	}
	var declared []string
	for name, kind := range envelope {
		f.So(dispatch[name], should.Equal, kind)
		f.So(delivery[name], should.Equal, kind)
		declared = append(declared, name)
	}
	slices.Sort(shared)
	slices.Sort(declared)
	f.So(declared, should.Equal, shared)
}

// filled returns an Envelope whose every field holds a distinct non-zero value.
func filled() Envelope {
	var e Envelope
	v := reflect.ValueOf(&e).Elem()
	for i := range v.NumField() {
		field := v.Field(i)
		switch field.Interface().(type) {
		case string:
			field.SetString(v.Type().Field(i).Name + "-value")
		case int:
			field.SetInt(int64(i + 1))
		case time.Duration:
			field.SetInt(int64(i+1) * int64(time.Millisecond))
		case time.Time:
			field.Set(reflect.ValueOf(time.Unix(int64(1000+i), 0)))
		case []string:
			field.Set(reflect.ValueOf([]string{"step-a", "step-b"}))
		default:
			panic("filled: no value for " + v.Type().Field(i).Name)
		}
	}
	return e
}

// TestConversionsCarryEveryField fails when a conversion forgets a field.
func (f *EnvelopeFixture) TestConversionsCarryEveryField() {
	e := filled()
	var dispatch Dispatch
	dispatch.SetEnvelope(e)
	f.So(dispatch.Envelope(), should.Equal, e)
	var delivery Delivery
	delivery.SetEnvelope(e)
	f.So(delivery.Envelope(), should.Equal, e)
	f.So(delivery.Redispatch("q").Envelope(), should.Equal, e)
}

func (f *EnvelopeFixture) TestSetEnvelopeLeavesTheRestAlone() {
	dispatch := Dispatch{Topic: "t", RoutingKey: "k", Payload: []byte("p"), Mandatory: true, Transient: true}
	dispatch.SetEnvelope(filled())
	f.So(dispatch.Topic, should.Equal, "t")
	f.So(dispatch.RoutingKey, should.Equal, "k")
	f.So(dispatch.Mandatory && dispatch.Transient, should.BeTrue)
	delivery := Delivery{DeliveryID: 7, SourceQueue: "q", Redelivered: true, Durable: true}
	delivery.SetEnvelope(filled())
	f.So(delivery.DeliveryID, should.Equal, uint64(7))
	f.So(delivery.SourceQueue, should.Equal, "q")
}

func (f *EnvelopeFixture) TestCloneSharesNoRoute() {
	e := filled()
	c := e.Clone()
	c.Route[0] = "changed"
	f.So(e.Route[0], should.Equal, "step-a")
}

func (f *EnvelopeFixture) TestRedispatchSharesNoRouteOrHeaders() {
	delivery := Delivery{Headers: map[string]any{"h": "v"}}
	delivery.SetEnvelope(filled())
	copied := delivery.Redispatch("q")
	copied.Route[0] = "changed"
	copied.Headers["h"] = "changed"
	f.So(delivery.Route[0], should.Equal, "step-a")
	f.So(delivery.Headers["h"], should.Equal, "v")
}
