#pragma once
// Streaming across loop nests (docs/performance.md#streaming-across-loop-nests): after the
// fusion pass, chains of `fused` equations that iterate over the same rows and read each
// other's outputs only at nearby rows (i0 + c) become one `fused_chain` equation, whose
// kernel runs every loop nest of the chain on a band of rows before moving to the next
// band, so the rows a loop nest writes are read by the next while still in cache.
#include <cstdint>

#include "ir/program.h"

namespace tessel::compiler {

/// `p` (the output of the fusion pass) with every chain of two or more consecutive `fused`
/// equations that can stream replaced by one `fused_chain` equation; an equation between
/// members of a chain that reads none of the chain's earlier outputs moves before the chain.
/// A loop nest joins the chain before it when it keeps its domain's first dimension (its
/// rows; no reduction over it) and each of its reads of a value the chain computes is at
/// rows i0 + c (codegen.h's row_offsets), with the rows recomputed at the edges of a
/// thread's block at most kMaxHaloRows. The loop nests of a chain may have different
/// numbers of rows (`x[1:] - x[:-1]` has one row fewer than x): rows are numbered from 0
/// in all of them, and the blocks split the rows of the longest. `band_bytes`: bytes of
/// one band, its rows of every array the chain reads or writes
/// (TESSEL_FUSION_STREAM_BAND_BYTES). `block_rows` > 0 splits the rows into blocks of that
/// many rows instead of one block per thread (tests use it to run many block edges).
ir::Program stream_chains(const ir::Program& p, int64_t band_bytes, int64_t block_rows = 0);

/// Most rows a loop nest of a chain computes beyond either edge of a thread's block (for
/// the loop nests after it that read it at offset rows).
inline constexpr int64_t kMaxHaloRows = 32;

}  // namespace tessel::compiler
