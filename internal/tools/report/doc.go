// Package report is the JSON report of "detcoll bench", read by "detcoll
// plot" and by anyone comparing runs: what ran where (metadata) and, per
// operation, input size and timing mode, the slowest rank's median time of
// detcoll and of the reference, with every rank's samples, their spread and
// the bus bandwidths.
//
// A report is plain data. Write refuses, and Read rejects, a report that
// is not self-consistent: a wrong kind or schema version, unknown fields,
// missing metadata, rows whose samples do not match the world size and the
// iteration count, or medians (or other summary fields) that are not the
// ones the samples give. So a report that reads is one a plot may trust.
//
// # Statistics
//
// Each rank's samples of a row reduce to their median; the row's time is
// the largest of those medians, the slowest rank's (see Median and
// Slowest). A collective ends for the job when its slowest rank ends. Its
// spread is taken the same way: each rank's 10th and 90th percentile, the
// largest over the ranks (Percentile, SlowestPercentile), a band that
// contains the row's time. Bus bandwidths follow nccl-tests (Bandwidth).
//
// # Compatibility
//
// The spread and the bus bandwidths are summary fields, added within
// schema version 1: a report may lack them (one written before them, or
// by tools/symm_mem.py), and Read then fills them in from the samples;
// one it has must be what the samples give. Older readers refuse a report
// that has them, as an unknown field, rather than misread it.
//
// # Imports
//
// It imports internal/core/num only (element types by name): a report is read and
// written without a backend or a GPU. It is a tool's package (bench writes
// reports, plot reads them); the library must never import it.
package report
