// CRC-32C: the reflected polynomial 0x82F63B78, initial value and final xor 0xFFFFFFFF.
// Internally the CRC register runs without the inversions ("raw" state): the register after
// bytes D from state s is s * x^(8|D|) ^ raw(D, 0) (mod P), which lets independent streams
// be joined by one multiplication modulo P (as zlib's crc32_combine does for CRC-32).
#include "checkpoint/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#define TESSEL_CRC32C_X86 1
#endif

namespace tessel::checkpoints::crc32c {

namespace {

constexpr uint32_t kPoly = 0x82F63B78u;

// a * b modulo P, bit 31 holding x^0 (the reflected order).
uint32_t multiply(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (uint32_t m = 1u << 31; m != 0; m >>= 1) {
    if (a & m) product ^= b;
    b = (b & 1) ? (b >> 1) ^ kPoly : b >> 1;
  }
  return product;
}

// x^(8 n) modulo P: square-and-multiply over x^(2^k).
uint32_t x_pow_8n(uint64_t n) {
  static const std::array<uint32_t, 64> squares = [] {
    std::array<uint32_t, 64> t{};
    t[0] = 1u << 30;  // x^1
    for (size_t k = 1; k < t.size(); ++k) t[k] = multiply(t[k - 1], t[k - 1]);
    return t;
  }();
  uint32_t p = 1u << 31;  // x^0
  for (size_t k = 3; n != 0; n >>= 1, ++k)  // 8 n = n * 2^3
    if (n & 1) p = multiply(squares[k % 64], p);
  return p;
}

const std::array<uint32_t, 256>& table() {
  static const std::array<uint32_t, 256> t = [] {
    std::array<uint32_t, 256> out{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
      out[i] = c;
    }
    return out;
  }();
  return t;
}

uint32_t raw_table(uint32_t s, const unsigned char* p, size_t n) {
  const auto& t = table();
  for (size_t i = 0; i < n; ++i) s = t[(s ^ p[i]) & 0xFF] ^ (s >> 8);
  return s;
}

#ifdef TESSEL_CRC32C_X86
constexpr size_t kStream = 8192;  // bytes per stream per round: 3 streams hide the latency of 3

__attribute__((target("sse4.2"))) uint32_t raw_sse42(uint32_t s, const unsigned char* p, size_t n) {
  static const uint32_t shift = x_pow_8n(kStream);
  uint64_t s0 = s;
  while (n >= 3 * kStream) {
    uint64_t s1 = 0, s2 = 0;
    for (size_t i = 0; i < kStream; i += 8) {
      uint64_t a, b, c;
      std::memcpy(&a, p + i, 8);
      std::memcpy(&b, p + kStream + i, 8);
      std::memcpy(&c, p + 2 * kStream + i, 8);
      s0 = _mm_crc32_u64(s0, a);
      s1 = _mm_crc32_u64(s1, b);
      s2 = _mm_crc32_u64(s2, c);
    }
    s0 = multiply(shift, multiply(shift, uint32_t(s0)) ^ uint32_t(s1)) ^ uint32_t(s2);
    p += 3 * kStream;
    n -= 3 * kStream;
  }
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    s0 = _mm_crc32_u64(s0, v);
  }
  uint32_t s32 = uint32_t(s0);
  for (; n > 0; ++p, --n) s32 = _mm_crc32_u8(s32, *p);
  return s32;
}

bool has_sse42() {
  static const bool yes = __builtin_cpu_supports("sse4.2");
  return yes;
}
#endif

}  // namespace

uint32_t extend(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
#ifdef TESSEL_CRC32C_X86
  if (has_sse42()) return ~raw_sse42(~crc, p, n);
#endif
  return ~raw_table(~crc, p, n);
}

uint32_t combine(uint32_t crc_a, uint32_t crc_b, uint64_t length_b) { return multiply(x_pow_8n(length_b), crc_a) ^ crc_b; }

bool hardware() {
#ifdef TESSEL_CRC32C_X86
  return has_sse42();
#else
  return false;
#endif
}

}  // namespace tessel::checkpoints::crc32c
