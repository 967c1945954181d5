package jobenv

import (
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// defaultPort is the base of the rendezvous port used when no address is
// given: torch.distributed's default, familiar to whoever opens ports for
// such jobs.
const defaultPort = 29500

// jobAddr resolves the rendezvous address by the rules in FromEnv's doc.
func jobAddr(getenv func(string) string, job Job) (string, error) {
	if v := getenv(envAddr); v != "" {
		host, port, err := net.SplitHostPort(v)
		if err != nil {
			return "", envErrorf(envAddr, "%q is not host:port", v)
		}
		if err := checkHost(host); err != nil {
			return "", &EnvError{Var: envAddr, Err: err}
		}
		p, err := parsePort(setting{envAddr, port})
		if err != nil {
			return "", err
		}
		return net.JoinHostPort(host, strconv.Itoa(p)), nil
	}

	host, port := setting{envMasterAddr, getenv(envMasterAddr)}, setting{envMasterPort, getenv(envMasterPort)}
	switch {
	case host.value != "" && port.value != "":
		h := host.value
		if len(h) > 1 && h[0] == '[' && h[len(h)-1] == ']' {
			h = h[1 : len(h)-1] // torch wants it bare, but brackets are a common habit
		}
		if err := checkHost(h); err != nil {
			return "", &EnvError{Var: envMasterAddr, Err: err}
		}
		p, err := parsePort(port)
		if err != nil {
			return "", err
		}
		if v := getenv(envAgentStore); strings.EqualFold(v, "true") || v == "1" {
			if p++; p > 65535 {
				return "", envErrorf(envMasterPort, "%d is torchrun's agent store, and %d (ours) is not a port", p-1, p)
			}
		}
		return net.JoinHostPort(h, strconv.Itoa(p)), nil
	case host.value != "":
		return "", envErrorf(envMasterPort, "not set, but %s is", envMasterAddr)
	case port.value != "":
		return "", envErrorf(envMasterAddr, "not set, but %s is", envMasterPort)
	}

	if job.World == 1 {
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(defaultPort)), nil
	}
	if job.Source == SourceTorchrun || job.Source == SourceEnv || job.LocalWorld < job.World {
		return "", nil
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(defaultPortFor(jobID(getenv, job.Source)))), nil
}

// jobID is an identifier that every rank of the job sees alike; "" if none.
func jobID(getenv func(string) string, source string) string {
	switch source {
	case SourceSlurm:
		if id := getenv(envSlurmJobID); id != "" {
			return id + "." + getenv(envSlurmStepID)
		}
	case SourceOpenMPI:
		if id := getenv(envPMIxNamespace); id != "" {
			return id
		}
		return getenv(envOMPIJobID)
	}
	return ""
}

func defaultPortFor(id string) int {
	if id == "" {
		return defaultPort
	}
	h := fnv.New32a()
	h.Write([]byte(id))
	return defaultPort + 1 + int(h.Sum32()%1000)
}

func parsePort(s setting) (int, error) {
	p, err := strconv.Atoi(s.value)
	if err != nil || p < 1 || p > 65535 {
		return 0, envErrorf(s.name, "port %q is not in [1, 65535]", s.value)
	}
	return p, nil
}

// checkHost accepts an IP address (IPv6 without brackets, zones allowed) or
// something that looks like a host name; resolving it is the store's job.
func checkHost(h string) error {
	if h == "" {
		return errors.New("empty host")
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return nil
	}
	if len(h) > 253 {
		return fmt.Errorf("host name of %d bytes is longer than 253", len(h))
	}
	for _, c := range []byte(h) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_') {
			return fmt.Errorf("%q is not an IP address or host name", h)
		}
	}
	return nil
}
