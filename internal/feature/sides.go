package feature

// The sides of a cost benchmark, the last element of its sub-benchmarks'
// names. Every round runs the stock side twice, A and its repeat A2 (the
// A/A control, measured exactly as the comparison is), and the patched
// side B once, in an order that changes from round to round
// (internal/guest/rounds); the host pairs them by round and judges B
// against A, and A2 against A for the noise floor (internal/host/cost).
const (
	SideA  = "side=A"
	SideA2 = "side=A2"
	SideB  = "side=B"
)

// SideOrders are the six orders of the three sides; round k runs
// SideOrders[k%6], so that every side takes every place equally often.
var SideOrders = [6][3]string{
	{SideA, SideB, SideA2},
	{SideB, SideA, SideA2},
	{SideA, SideA2, SideB},
	{SideA2, SideB, SideA},
	{SideB, SideA2, SideA},
	{SideA2, SideA, SideB},
}

// RoundsEnv, set in a test binary's environment, is how many rounds a cost
// benchmark runs in one call (one when unset): the cost pass sets it, since
// go test -count would repeat each side in a block of its own rather than
// interleave them.
const RoundsEnv = "XMITCHECK_COST_ROUNDS"
