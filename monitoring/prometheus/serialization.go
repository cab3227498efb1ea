package prometheus

import (
	"strings"

	"github.com/warrenmq/messaging/serialization"
)

// Serialization returns the serialization.Monitor. It hears the content type
// of each decode, so serialization_decoded_total is labelled by codec.
func (m *Metrics) Serialization() serialization.ContentTypeMonitor { return serializationMonitor{m} }

type serializationMonitor struct{ m *Metrics }

func (s serializationMonitor) MessageEncoded(err error) {
	s.m.encoded.WithLabelValues(result(err)).Inc()
}

// MessageDecoded counts a decode whose content type was not told as codec
// "other"; the serialization decorator reports through MessageDecodedAs.
func (s serializationMonitor) MessageDecoded(err error) {
	s.m.decoded.WithLabelValues(codecOther, result(err)).Inc()
}

func (s serializationMonitor) MessageDecodedAs(contentType string, err error) {
	s.m.decoded.WithLabelValues(codecOf(contentType), result(err)).Inc()
}

const codecOther = "other"

// codecOf names the codec of a content type with one of a few label values:
// json (serialization's default, also for a delivery without a content type),
// avro (both modes of patterns/schema/avro and any +avro type), encrypted
// (serialization/encryption), protobuf (serialization/protobuf), or other.
// The names are written here, not imported, so that the metrics link none of
// the codecs' libraries.
func codecOf(contentType string) string {
	if i := strings.IndexByte(contentType, ';'); i >= 0 {
		contentType = contentType[:i]
	}
	switch ct := strings.ToLower(strings.TrimSpace(contentType)); {
	case ct == "", ct == serialization.JSONContentType, strings.HasSuffix(ct, "+json"):
		return "json"
	case ct == "application/vnd.acemq.avro", ct == "avro/binary", ct == "application/avro", strings.HasSuffix(ct, "+avro"):
		return "avro"
	case ct == "application/vnd.acemq.encrypted":
		return "encrypted"
	case ct == "application/x-protobuf", ct == "application/protobuf":
		return "protobuf"
	}
	return codecOther
}
