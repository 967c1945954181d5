package cuda

import (
	"strings"
	"testing"

	"github.com/detcoll/detcoll/internal/binding/driver"
)

// TestWindowMsg: every kind of message comes back as it went, and a
// message too short, of an unknown kind, in a row past the table, or
// describing an impossible allocation is refused.
func TestWindowMsg(t *testing.T) {
	var ipc driver.IPCMemHandle
	for i := range ipc {
		ipc[i] = byte(i + 1)
	}
	var token [fdTokenLen]byte
	for i := range token {
		token[i] = byte(0xf0 + i)
	}
	for _, m := range []windowMsg{
		{kind: windowIPC, row: 3, off: 4096, ipc: ipc},
		{kind: windowFD, row: maxWindows - 1, off: 1 << 20, size: 64 << 20, align: 2 << 20, token: token},
		{kind: windowFD, row: 0, off: 0, size: 2 << 20, align: 0, token: token},
		{kind: windowNone, row: 7, why: "cuMemExportToShareableHandle(...): CUDA_ERROR_INVALID_VALUE (1): invalid argument"},
		{kind: windowNone, row: 1},
	} {
		b := m.encode()
		if len(b) != windowMsgLen+len(m.why) {
			t.Errorf("%+v: %d bytes, want %d", m, len(b), windowMsgLen+len(m.why))
		}
		got, err := decodeWindowMsg(b)
		if err != nil {
			t.Errorf("%+v: %v", m, err)
			continue
		}
		if got != m {
			t.Errorf("got %+v, want %+v", got, m)
		}
	}

	good := windowMsg{kind: windowFD, row: 2, off: 16, size: 4 << 20, align: 2 << 20, token: token}
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "0 bytes"},
		{"short", good.encode()[:windowMsgLen-1], "bytes"},
		{"unknown kind", func() []byte { b := good.encode(); b[0] = 3; return b }(), "kind 3"},
		{"row past the table", windowMsg{kind: windowIPC, row: maxWindows}.encode(), "row"},
		{"negative row", windowMsg{kind: windowIPC, row: -1}.encode(), "row"},
		{"empty allocation", windowMsg{kind: windowFD, row: 1}.encode(), "allocation of 0 bytes"},
		{"offset past the allocation", windowMsg{kind: windowFD, row: 1, off: 4 << 20, size: 4 << 20}.encode(), "allocation"},
		{"alignment past the allocation", windowMsg{kind: windowFD, row: 1, size: 2 << 20, align: 4 << 20}.encode(), "aligned"},
		{"allocation past an int", windowMsg{kind: windowFD, row: 1, size: 1 << 63}.encode(), "allocation"},
	} {
		m, err := decodeWindowMsg(tc.b)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %+v, %v; want an error saying %q", tc.name, m, err, tc.want)
		}
	}
}

// FuzzWindowMsg: decoding never panics, and what decodes encodes to the
// same bytes.
func FuzzWindowMsg(f *testing.F) {
	f.Add(windowMsg{kind: windowIPC, row: 3, off: 4096}.encode())
	f.Add(windowMsg{kind: windowFD, row: 1, off: 64, size: 2 << 20, align: 2 << 20}.encode())
	f.Add(windowMsg{kind: windowNone, row: 0, why: "no"}.encode())
	f.Add([]byte{2})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeWindowMsg(b)
		if err != nil {
			return
		}
		if got := m.encode(); string(got) != string(b) {
			t.Fatalf("decoded %+v from %x, which encodes to %x", m, b, got)
		}
	})
}
