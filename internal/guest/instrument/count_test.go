package instrument

import (
	"reflect"
	"structs"
	"testing"

	"gotest.tools/v3/assert"
)

func TestAddInto(t *testing.T) {
	type inner struct{ A, B uint64 }
	type counts struct {
		_     structs.HostLayout
		Calls uint64
		Size  [2]uint32
		In    inner
		Neg   int32
	}
	per := []counts{
		{Calls: 1, Size: [2]uint32{1, 2}, In: inner{3, 4}, Neg: -1},
		{Calls: 2, Size: [2]uint32{5, 6}, In: inner{7, 8}, Neg: 3},
	}
	var sum counts
	for i := range per {
		addInto(reflect.ValueOf(&sum).Elem(), reflect.ValueOf(&per[i]).Elem())
	}
	assert.DeepEqual(t, sum, counts{Calls: 3, Size: [2]uint32{6, 8}, In: inner{10, 12}, Neg: 2})
}
