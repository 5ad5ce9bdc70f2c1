package coproc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/vmihailenco/msgpack/v5"
)

// DecodeJSON decodes a request written as JSON, with the field names of the
// msgpack encoding ("ranges", "filter", "group_by", ...), for people and
// tools (kvctl cop). Keys — a range's "start" and "end" — are JSON strings,
// taken as their UTF-8 bytes ("\u00ff" is the two bytes C3 BF): a bound
// that is not UTF-8 needs the msgpack encoding ([Encode]). An integral JSON number in an [Expr] value is an
// int64, any other a float64, as msgpack would carry them.
//
// It is exactly as strict as [Decode], which it ends in: the JSON becomes
// msgpack and goes through Decode's checks (unknown fields, depth, size).
// JSON-level problems — not one JSON object, trailing data — are
// [ErrMalformed] too.
func DecodeJSON(b []byte) (*Request, error) {
	if len(b) > MaxRequestBytes {
		return nil, fmt.Errorf("coproc: decode JSON request: %w: %d bytes, cap %d", ErrTooLarge, len(b), MaxRequestBytes)
	}
	if err := jsonDuplicateKeys(b); err != nil {
		return nil, fmt.Errorf("coproc: decode JSON request: %w", err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("coproc: decode JSON request: %w: %w", ErrMalformed, err)
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("coproc: decode JSON request: %w: data after the request object", ErrMalformed)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fmt.Errorf("coproc: decode JSON request: %w", ErrNotMap)
	}
	v, err := jsonNumbers(v, 0)
	if err != nil {
		return nil, fmt.Errorf("coproc: decode JSON request: %w", err)
	}
	mp, err := msgpack.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("coproc: decode JSON request: %w: %w", ErrMalformed, err)
	}
	return Decode(mp)
}

// jsonDuplicateKeys refuses an object that holds a key twice, as Decode
// does: encoding/json would keep the last one silently, and a "filter"
// followed by "filter": null would read every row. Malformed JSON is left
// for the decoder to word.
func jsonDuplicateKeys(b []byte) error {
	d := json.NewDecoder(bytes.NewReader(b))
	type frame struct {
		keys  map[string]struct{} // nil in an array
		isKey bool                // the next token in this object is a key
	}
	var stack []frame
	for {
		t, err := d.Token()
		if err != nil {
			return nil // the end, or malformed: Decode says which
		}
		top := len(stack) - 1
		if top >= 0 && stack[top].keys != nil && stack[top].isKey {
			if k, ok := t.(string); ok {
				if _, dup := stack[top].keys[k]; dup {
					return fmt.Errorf("%w: %q at offset %d", ErrDuplicateKey, k, d.InputOffset())
				}
				stack[top].keys[k] = struct{}{}
				stack[top].isKey = false
				continue
			}
		}
		if top >= 0 && stack[top].keys != nil {
			stack[top].isKey = true // a value ends here, or its object or array starts
		}
		switch t {
		case json.Delim('{'):
			if len(stack) > MaxDepth {
				return nil // jsonNumbers refuses it with its own error
			}
			stack = append(stack, frame{keys: map[string]struct{}{}, isKey: true})
		case json.Delim('['):
			if len(stack) > MaxDepth {
				return nil
			}
			stack = append(stack, frame{})
		case json.Delim('}'), json.Delim(']'):
			if top >= 0 { // the tokenizer refuses an unmatched one anyway
				stack = stack[:top]
			}
		}
	}
}

// jsonNumbers replaces json.Numbers by int64 or float64, refusing nesting
// past MaxDepth before msgpack's recursion meets it.
func jsonNumbers(v any, depth int) (any, error) {
	if depth > MaxDepth {
		return nil, fmt.Errorf("%w: nesting past %d levels", ErrTooDeep, MaxDepth)
	}
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(x.String(), 10, 64); err == nil {
			return i, nil
		}
		f, err := strconv.ParseFloat(x.String(), 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%w: number %s is out of range", ErrMalformed, x)
		}
		return f, nil
	case map[string]any:
		for k, e := range x {
			n, err := jsonNumbers(e, depth+1)
			if err != nil {
				return nil, err
			}
			x[k] = n
		}
	case []any:
		for i, e := range x {
			n, err := jsonNumbers(e, depth+1)
			if err != nil {
				return nil, err
			}
			x[i] = n
		}
	}
	return v, nil
}
