package num

import "fmt"

// DType names an element type. The zero value is invalid so that a
// forgotten field is caught by validation rather than read as bytes.
type DType uint8

const (
	Invalid DType = iota
	BFloat16Type
	Float16Type
	Float32Type
	Float64Type
	Int8Type
	Uint8Type
	Int16Type
	Uint16Type
	Int32Type
	Uint32Type
	Int64Type
	Uint64Type
	numDTypes
)

var dtypeInfo = [numDTypes]struct {
	name string
	size int
}{
	Invalid:      {"invalid", 0},
	BFloat16Type: {"bfloat16", 2},
	Float16Type:  {"float16", 2},
	Float32Type:  {"float32", 4},
	Float64Type:  {"float64", 8},
	Int8Type:     {"int8", 1},
	Uint8Type:    {"uint8", 1},
	Int16Type:    {"int16", 2},
	Uint16Type:   {"uint16", 2},
	Int32Type:    {"int32", 4},
	Uint32Type:   {"uint32", 4},
	Int64Type:    {"int64", 8},
	Uint64Type:   {"uint64", 8},
}

// Valid reports whether d names a known element type.
func (d DType) Valid() bool { return d > Invalid && d < numDTypes }

// Size is the element size in bytes (0 for an invalid type).
func (d DType) Size() int {
	if !d.Valid() {
		return 0
	}
	return dtypeInfo[d].size
}

// Reducible reports whether sums of d are defined (the floating types).
func (d DType) Reducible() bool {
	return d == BFloat16Type || d == Float16Type || d == Float32Type || d == Float64Type
}

func (d DType) String() string {
	if !d.Valid() {
		return fmt.Sprintf("dtype(%d)", uint8(d))
	}
	return dtypeInfo[d].name
}

// ParseDType is the inverse of String.
func ParseDType(s string) (DType, error) {
	for d := BFloat16Type; d < numDTypes; d++ {
		if dtypeInfo[d].name == s {
			return d, nil
		}
	}
	return Invalid, fmt.Errorf("unknown dtype %q", s)
}
