#pragma once
// CRC-32C (Castagnoli, the iSCSI/ext4/Btrfs checksum) for checkpoint files: with SSE4.2's
// crc32 instruction on three interleaved streams (about 8 bytes a cycle) where the CPU has
// it, a table otherwise. Same conventions as zlib's crc32: start from 0, feed the bytes in
// order, and combine the CRCs of consecutive pieces computed apart.
#include <cstddef>
#include <cstdint>

namespace tessel::checkpoints::crc32c {

/// The CRC-32C of the bytes before `data` (whose CRC-32C is `crc`; 0 for none) followed by
/// `n` bytes at `data`. extend(0, "123456789", 9) == 0xE3069283.
uint32_t extend(uint32_t crc, const void* data, size_t n);

/// The CRC-32C of A followed by B, from crc_a = CRC-32C(A), crc_b = CRC-32C(B) and B's length.
uint32_t combine(uint32_t crc_a, uint32_t crc_b, uint64_t length_b);

/// True when extend uses the SSE4.2 instruction (for the benchmark's report).
bool hardware();

}  // namespace tessel::checkpoints::crc32c
