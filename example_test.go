package detcoll_test

import (
	"context"
	"fmt"
	"log"

	"github.com/detcoll/detcoll"
)

// A rank sums a vector with its peers. Started alone, as here, the
// communicator has one rank; under "detcoll run -n 4" every rank runs the
// same code and gets the sum over the four.
func Example() {
	ctx := context.Background()
	c, err := detcoll.Open(ctx, detcoll.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(ctx)

	grads := []float32{0.5, 1.25, -3}
	if err := detcoll.AllReduce(c, grads, grads); err != nil { // in place
		log.Fatal(err)
	}
	fmt.Println(c.WorldSize(), grads)
	// Output: 1 [0.5 1.25 -3]
}

// bfloat16 sums round once per node of the tree, in bfloat16.
func ExampleAllReduce_bfloat16() {
	ctx := context.Background()
	c, err := detcoll.Open(ctx, detcoll.Options{WorldSize: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(ctx)

	in := []detcoll.BFloat16{detcoll.NewBFloat16(1.00390625), detcoll.NewBFloat16(3)}
	out := make([]detcoll.BFloat16, len(in))
	if err := detcoll.AllReduce(c, in, out); err != nil {
		log.Fatal(err)
	}
	fmt.Println(out[0].Float32(), out[1].Float32())
	// Output: 1 3
}

// The staged all-reduce: write the input straight into the memory peers
// read, then reduce.
func ExampleStage() {
	ctx := context.Background()
	c, err := detcoll.Open(ctx, detcoll.Options{WorldSize: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(ctx)

	view, err := detcoll.Stage[float64](c, 3)
	if err != nil {
		log.Fatal(err)
	}
	for i := range view {
		view[i] = float64(i) * 1.5 // e.g. a GEMM's epilogue writing its output
	}
	out := make([]float64, 3)
	if err := detcoll.AllReduceStaged(c, out); err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
	// Output: [0 1.5 3]
}
