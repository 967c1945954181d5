package jobenv

import (
	"errors"
	"strconv"
	"strings"
)

// The Slurm variables that may give the number of tasks on this node.
const (
	envSlurmStepTasksPerNode = "SLURM_STEP_TASKS_PER_NODE"
	envSlurmNTasksPerNode    = "SLURM_NTASKS_PER_NODE"
	envSlurmTasksPerNode     = "SLURM_TASKS_PER_NODE"
)

// slurmLocalWorld finds how many tasks of the step run on this node, by the
// rules in FromEnv's doc. When none applies the result is
// SLURM_NTASKS_PER_NODE unset, the name an error about it shows.
func slurmLocalWorld(getenv func(string) string) (setting, error) {
	node := setting{envSlurmNodeID, getenv(envSlurmNodeID)}
	nodeOK := node.value != ""
	if nodeOK {
		n, err := atoi(node)
		if err != nil {
			return setting{}, err
		}
		if n < 0 {
			return setting{}, envErrorf(node.name, "%d is negative", n)
		}
	}
	if v := getenv(envSlurmStepTasksPerNode); v != "" && nodeOK {
		return tasksOnNode(setting{envSlurmStepTasksPerNode, v}, node)
	}
	if v := getenv(envSlurmNTasksPerNode); v != "" {
		return setting{envSlurmNTasksPerNode, v}, nil
	}
	if v := getenv(envSlurmTasksPerNode); v != "" && nodeOK {
		return tasksOnNode(setting{envSlurmTasksPerNode, v}, node)
	}
	return setting{name: envSlurmNTasksPerNode}, nil
}

// tasksOnNode picks node's entry from a Slurm tasks-per-node list such as
// "2(x3),1" (three nodes of two tasks, then one of one).
func tasksOnNode(list, node setting) (setting, error) {
	idx, _ := strconv.Atoi(node.value) // checked by the caller
	for entry := range strings.SplitSeq(list.value, ",") {
		tasks, count, err := parseTasksEntry(entry)
		if err != nil {
			return setting{}, &EnvError{Var: list.name, Err: err}
		}
		if idx < count {
			return setting{list.name, strconv.Itoa(tasks)}, nil
		}
		idx -= count
	}
	return setting{}, envErrorf(node.name, "%s is beyond the nodes of %s=%q", node.value, list.name, list.value)
}

// parseTasksEntry parses "N" or "N(xM)": N tasks on each of M nodes (M = 1
// for "N").
func parseTasksEntry(e string) (tasks, count int, err error) {
	malformed := errors.New("malformed entry " + strconv.Quote(e))
	count = 1
	if head, rep, ok := strings.Cut(e, "(x"); ok {
		rep, ok = strings.CutSuffix(rep, ")")
		if count, err = strconv.Atoi(rep); !ok || err != nil || count < 1 {
			return 0, 0, malformed
		}
		e = head
	}
	if tasks, err = strconv.Atoi(e); err != nil || tasks < 1 {
		return 0, 0, malformed
	}
	return tasks, count, nil
}
