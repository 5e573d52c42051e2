#include "backend/cpu/lapack_schur.h"

#include <algorithm>
#include <vector>

#include "backend/cpu/lapack_util.h"

namespace tessel::cpu {
namespace {

using namespace lapack;

// ---- typed entry points ----

// gees on row-major storage (LAPACKE transposes); no eigenvalue ordering (select unused).
lapack_int gees(char jobvs, lapack_int n, float* a, float* z) {
  std::vector<float> wr(static_cast<size_t>(n)), wi(static_cast<size_t>(n));
  lapack_int sdim = 0;
  return LAPACKE_sgees(LAPACK_ROW_MAJOR, jobvs, 'N', nullptr, n, a, n, &sdim, wr.data(), wi.data(), z, n);
}
lapack_int gees(char jobvs, lapack_int n, double* a, double* z) {
  std::vector<double> wr(static_cast<size_t>(n)), wi(static_cast<size_t>(n));
  lapack_int sdim = 0;
  return LAPACKE_dgees(LAPACK_ROW_MAJOR, jobvs, 'N', nullptr, n, a, n, &sdim, wr.data(), wi.data(), z, n);
}
lapack_int gees(char jobvs, lapack_int n, c64* a, c64* z) {
  std::vector<c64> w(static_cast<size_t>(n));
  lapack_int sdim = 0;
  return LAPACKE_cgees(LAPACK_ROW_MAJOR, jobvs, 'N', nullptr, n, a, n, &sdim, w.data(), z, n);
}
lapack_int gees(char jobvs, lapack_int n, c128* a, c128* z) {
  std::vector<c128> w(static_cast<size_t>(n));
  lapack_int sdim = 0;
  return LAPACKE_zgees(LAPACK_ROW_MAJOR, jobvs, 'N', nullptr, n, a, n, &sdim, w.data(), z, n);
}

template <class T> void schur_t(int64_t batch, int64_t n, const T* a, T* t, T* z) {
  const lapack_int ni = to_int(n, "schur");
  for_each_matrix(batch, 25.0 * double(n) * double(n) * double(n), [&](int64_t lo, int64_t hi) {
    std::vector<T> zbuf(z ? 1 : size_t(std::max<int64_t>(1, n * n)));
    for (int64_t p = lo; p < hi; ++p) {
      T* tp = t + p * n * n;
      T* zp = z ? z + p * n * n : zbuf.data();
      std::copy(a + p * n * n, a + (p + 1) * n * n, tp);
      if (n == 0) continue;
      if (gees(z ? 'V' : 'N', ni, tp, zp) != 0) {
        fill_nan(tp, n * n);
        if (z) fill_nan(zp, n * n);
      }
    }
  });
}

}  // namespace

void schur(DType d, int64_t batch, int64_t n, const void* a, void* t, void* z) {
  TESSEL_LAPACK_DISPATCH("schur", d,
                         schur_t<T>(batch, n, static_cast<const T*>(a), static_cast<T*>(t), static_cast<T*>(z)))
}

}  // namespace tessel::cpu
