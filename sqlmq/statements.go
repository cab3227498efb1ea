package sqlmq

import "strings"

// Statements splits DDL from Schema or TableSchema into single statements,
// without comments, for drivers that run one statement per Exec. Apply them in
// order with your migrations; the library never runs them itself.
func Statements(ddl string) []string {
	var kept []string
	for _, line := range strings.Split(ddl, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			kept = append(kept, line)
		}
	}
	var statements []string
	for _, statement := range strings.Split(strings.Join(kept, "\n"), ";") {
		if statement = strings.TrimSpace(statement); statement != "" {
			statements = append(statements, statement)
		}
	}
	return statements
}
