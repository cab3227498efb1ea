package transporttest

import (
	"fmt"
	"reflect"
	"time"

	"github.com/warrenmq/messaging"
)

// EnvelopeDifferences names each field in which got differs from want, field
// by field through reflection, so a field added to messaging.Envelope is
// compared without a change here. Times are compared as instants (a
// transport may return them in another zone).
func EnvelopeDifferences(got, want messaging.Envelope) []string {
	var differences []string
	g, w := reflect.ValueOf(got), reflect.ValueOf(want)
	for i := range g.NumField() {
		name := g.Type().Field(i).Name
		gv, wv := g.Field(i).Interface(), w.Field(i).Interface()
		if gt, ok := gv.(time.Time); ok {
			if !gt.Equal(wv.(time.Time)) {
				differences = append(differences, fmt.Sprintf("%s = %v; want %v", name, gt, wv))
			}
			continue
		}
		if !reflect.DeepEqual(gv, wv) {
			differences = append(differences, fmt.Sprintf("%s = %#v; want %#v", name, gv, wv))
		}
	}
	return differences
}

// UnsetEnvelopeFields names the fields of e that hold their zero value: a
// round trip that is to cover every field sends none.
func UnsetEnvelopeFields(e messaging.Envelope) []string {
	var unset []string
	v := reflect.ValueOf(e)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			unset = append(unset, v.Type().Field(i).Name)
		}
	}
	return unset
}
