// Package examples holds the runnable examples of the user documentation in
// doc/*.md. Each page names the example that shows its topic; the examples
// live in this package's _test.go files so that `go test ./doc/...` compiles
// every one of them and runs (and checks the output of) those that need no
// external service: they use the in-memory transport and SQLite.
package examples
