package check

import "github.com/detcoll/detcoll"

// Corrupt is host memory whose first all-reduce with a result comes back
// with the low bit of its first byte flipped: what a test runs a check on
// to prove that the check can fail.
type Corrupt struct {
	Host
	done bool
}

func (m *Corrupt) AllReduce(c *detcoll.Comm, dt detcoll.DType, in, out Buffer) error {
	if err := m.Host.AllReduce(c, dt, in, out); err != nil || m.done || out.Len() == 0 {
		return err
	}
	m.done = true
	hostBytes(out)[0] ^= 1
	return nil
}
