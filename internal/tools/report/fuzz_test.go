package report

import (
	"bytes"
	"reflect"
	"testing"
)

// FuzzRead: Read never panics, and what it accepts writes back to a report
// that reads as the same.
func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	if err := Write(&buf, sample()); err != nil {
		f.Fatal(err)
	}
	valid := buf.Bytes()
	f.Add(valid)
	none := sample()
	none.Meta.Reference, none.Meta.ReferenceDType = ReferenceNone, ""
	for i := range none.Rows {
		row := &none.Rows[i]
		row.ReferenceUS, row.ReferenceSamplesUS = 0, nil
		row.ReferenceP10US, row.ReferenceP90US, row.ReferenceBusBW = 0, 0, 0
	}
	buf.Reset()
	if err := Write(&buf, none); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	// Without the summary fields, which Read fills in.
	buf.Reset()
	if err := Write(&buf, unsummarised(sample())); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add(bytes.Replace(valid, []byte(`"detcoll_p10_us": 2.4`), []byte(`"detcoll_p10_us": 1e308`), 1))
	f.Add(bytes.Replace(valid, []byte(`"detcoll_us": 4`), []byte(`"detcoll_us": 4e-320`), 1))
	f.Add([]byte(`{"kind":"detcoll_bench","schema_version":1}`))
	f.Add([]byte(`{"kind":"detcoll_bench","schema_version":1,"metadata":{"options":null},"rows":[]}`))
	f.Add(bytes.Replace(valid, []byte(`"iterations": 3`), []byte(`"iterations": 1e9`), 1))
	f.Add(bytes.Replace(valid, []byte(`"capacity": 4096`), []byte(`"capacity": [1, {"a": "\u003c"}]`), 1))
	f.Add([]byte(`null`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := Write(&out, r); err != nil {
			t.Fatalf("Write of a report Read accepted = %v", err)
		}
		again, err := Read(&out)
		if err != nil {
			t.Fatalf("Read of Write's output = %v\n%s", err, out.Bytes())
		}
		if !reflect.DeepEqual(again, r) {
			t.Fatalf("the report changed on a round trip:\n got %+v\nwant %+v", again, r)
		}
	})
}
