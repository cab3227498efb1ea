package avro

import (
	"fmt"
	"strings"
)

// Accepts reports whether the codec reads contentType (parameters and case
// aside): its own mode's type, application/avro, or any type ending in
// "+avro"; never the other mode's own type, so a registered message read as
// plain, or a plain one as registered, is refused instead of decoding into
// wrong values.
func (c *Codec) Accepts(contentType string) bool {
	return c.refusal(contentType) == nil
}

// ContentTypes returns the content types to register the codec for with
// serialization.Options.AddDeserializer: its own, application/avro, the
// suffix "+avro" (serialization serves with it every "something+avro" type
// that has no registration of its own), and each of extra. The error names an
// extra type the codec does not accept, and why.
//
//	types, err := codec.ContentTypes()
//	connector := serialization.New(transport, serialization.Options.AddDeserializer(codec, types...), ...)
func (c *Codec) ContentTypes(extra ...string) ([]string, error) {
	types := []string{c.ContentType(), GenericContentType, Suffix}
	for _, contentType := range extra {
		if err := c.refusal(contentType); err != nil {
			return nil, err
		}
		types = append(types, contentType)
	}
	return types, nil
}

// refusal says why the codec does not read contentType, or nil.
func (c *Codec) refusal(contentType string) error {
	switch normalized := normalize(contentType); {
	case normalized == RegisteredContentType && !c.registered:
		return fmt.Errorf("avro: %s is registered Avro, each payload starting with 0x00 and a schema id, which a plain codec would read as wrong values; read it with avro.NewRegistered", contentType)
	case normalized == PlainContentType && c.registered:
		return fmt.Errorf("avro: %s is plain Avro, with no schema id in the payload, which a registered codec cannot read; read it with avro.NewPlain", contentType)
	case normalized == c.ContentType(), normalized == GenericContentType, strings.HasSuffix(normalized, Suffix):
		return nil
	default:
		return fmt.Errorf("avro: %q is not an Avro content type (%s, %s, or one ending in +avro)", contentType, c.ContentType(), GenericContentType)
	}
}

// normalize drops parameters, surrounding space and case, as serialization
// does when it picks a deserializer.
func normalize(contentType string) string {
	if i := strings.IndexByte(contentType, ';'); i >= 0 {
		contentType = contentType[:i]
	}
	return strings.ToLower(strings.TrimSpace(contentType))
}
