package jobenv_test

import (
	"fmt"

	"github.com/detcoll/detcoll/internal/job/jobenv"
)

// A rank of "mpirun -n 4" on one host, with a secret exported to every rank.
func ExampleFromEnv() {
	env := map[string]string{
		"OMPI_COMM_WORLD_RANK":       "2",
		"OMPI_COMM_WORLD_SIZE":       "4",
		"OMPI_COMM_WORLD_LOCAL_RANK": "2",
		"OMPI_COMM_WORLD_LOCAL_SIZE": "4",
		"DETCOLL_ADDR":               "127.0.0.1:29600",
		"DETCOLL_SECRET":             "0123abcd",
	}
	job, found, err := jobenv.FromEnv(func(name string) string { return env[name] })
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(found, job.Source, job.Rank, job.World, job.Addr)

	// A process that no launcher started is a world of its own.
	_, found, err = jobenv.FromEnv(func(string) string { return "" })
	fmt.Println(found, err)
	// Output:
	// true openmpi 2 4 127.0.0.1:29600
	// false <nil>
}
