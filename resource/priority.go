package resource

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Priority is a request's or a group's priority class. Higher runs first.
type Priority int

// The priority classes, as TiDB's resource groups name them.
const (
	PriorityLow    Priority = 1
	PriorityMedium Priority = 8 // the default
	PriorityHigh   Priority = 16
)

// String returns "low", "medium", "high", or the number.
func (p Priority) String() string {
	switch p {
	case PriorityLow:
		return "low"
	case PriorityMedium:
		return "medium"
	case PriorityHigh:
		return "high"
	}
	return fmt.Sprintf("priority(%d)", int(p))
}

// Valid reports whether p is one of the three classes.
func (p Priority) Valid() bool {
	return p == PriorityLow || p == PriorityMedium || p == PriorityHigh
}

// ParsePriority reads "low", "medium" or "high" (any case), or a class's
// number (1, 8, 16).
func ParsePriority(s string) (Priority, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "low", "1":
		return PriorityLow, nil
	case "medium", "8":
		return PriorityMedium, nil
	case "high", "16":
		return PriorityHigh, nil
	}
	return 0, fmt.Errorf("%w: priority %q is not low, medium or high", ErrInvalidGroup, s)
}

// MarshalJSON writes a class by name ("medium"); 0, the unset class,
// as 0.
func (p Priority) MarshalJSON() ([]byte, error) {
	if p.Valid() {
		return json.Marshal(p.String())
	}
	return json.Marshal(int(p))
}

// UnmarshalJSON reads a class's name or its number (what older clients
// send); a value that is neither is an error. A number outside the
// classes is left for GroupConfig validation to name.
func (p *Priority) UnmarshalJSON(b []byte) error {
	var n int
	if err := json.Unmarshal(b, &n); err == nil {
		*p = Priority(n)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("%w: priority %s is neither a name nor a number", ErrInvalidGroup, b)
	}
	q, err := ParsePriority(s)
	if err != nil {
		return err
	}
	*p = q
	return nil
}
