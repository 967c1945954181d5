package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Read decodes and validates one report, and fills in the summary fields
// it lacks (Row). Unknown fields, trailing data, another kind or schema
// version are errors.
func Read(r io.Reader) (*Report, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	// The kind and version first, so that a newer report is named as such
	// rather than as one with unknown fields.
	var head struct {
		Kind          string `json:"kind"`
		SchemaVersion int    `json:"schema_version"`
	}
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&head); err != nil {
		return nil, fmt.Errorf("report: not a report: %w", err)
	}
	if head.Kind != Kind {
		return nil, fmt.Errorf("report: kind %q, want %q", head.Kind, Kind)
	}
	if head.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("report: schema version %d; this detcoll reads version %d", head.SchemaVersion, SchemaVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	rep := new(Report)
	if err := dec.Decode(rep); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("report: data after the report")
	}
	// Options is kept as raw JSON: compact it, so that a report reads the
	// same however it was indented.
	if len(rep.Meta.Options) > 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, rep.Meta.Options); err != nil {
			return nil, fmt.Errorf("report: options: %w", err)
		}
		rep.Meta.Options = buf.Bytes()
	}
	if err := rep.Validate(); err != nil {
		return nil, err
	}
	// The summary fields a report lacks (Row): Validate has checked those
	// it has, which Summarise leaves as they are.
	for i := range rep.Rows {
		rep.Rows[i].Summarise(rep.Meta.WorldSize)
	}
	return rep, nil
}

// Write validates r and writes it as indented JSON with a final newline.
func Write(w io.Writer, r *Report) error {
	if err := r.Validate(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ReadFile reads the report at path.
func ReadFile(path string) (*Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// WriteFile writes r to path, creating its parent directories. The file
// appears whole or not at all: it is written beside path and renamed.
func WriteFile(path string, r *Report) error {
	var buf bytes.Buffer
	if err := Write(&buf, r); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = f.Write(buf.Bytes())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
