package resource

import "fmt"

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
