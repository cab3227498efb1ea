// Package avro is a serialization codec of Apache Avro (with
// github.com/hamba/avro/v2), in the two modes of the AceMQ family's
// libraries:
//
//   - Registered (NewRegistered, content type application/vnd.acemq.avro):
//     each payload is 0x00, the writer's schema id in 4 bytes big-endian
//     (Confluent's framing), then the Avro binary encoding. The writer
//     registers its schema in a patterns/schema registry (or looks it up) and
//     the reader fetches the writer's schema by the id, once, and caches it,
//     so a publisher can add a field before its consumers know of it.
//   - Plain (NewPlain, content type avro/binary): the Avro binary encoding
//     alone, of one schema both sides are given.
//
// Both also read application/avro and any type ending in +avro
// (Codec.ContentTypes lists what to register), and each refuses the other
// mode's own type, so a mode confusion is an error, never wrong values.
//
// Schema resolution happens when the codec has a reader schema to resolve
// onto, and not otherwise. A Go struct carries no Avro schema, so by default
// a message is read with the schema it was written with: its fields fill the
// struct fields of the same names (`avro:"name"` tags) and the struct's other
// fields stay zero. Options.Read gives a Go type a reader schema: a message is
// then resolved onto it, a field the writer did not have is filled with the
// reader's default, and a field the reader does not declare is skipped.
//
// A message whose schema id the registry does not hold is messaging.Fatal
// (parked at once); one whose schema could not be fetched because the
// registry did not answer is messaging.Retryable, and is read again through
// the retry policy. Each registry call is bounded by Options.Timeout.
//
// Install a codec on both sides of a queue, for the content types it reads:
//
//	codec, err := avro.NewRegistered(registry,
//		avro.Options.Write(reflect.TypeFor[OrderPlaced](), "order.placed", definition))
//	types, err := codec.ContentTypes()
//	connector := serialization.New(transport,
//		serialization.Options.Serializer(codec),
//		serialization.Options.AddDeserializer(codec, types...),
//		...)
//
// doc/codecs.md has the whole story.
package avro
