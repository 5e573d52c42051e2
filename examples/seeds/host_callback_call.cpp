// The host_callback seed's call() examples: `host_eig` (a host library — LAPACK's
// eigenvalue routine — used from jitted code through host::call, with result_shape
// m.shape[:-1] and m's dtype) and `host_sin` (call with call_with_device inside a pmap over
// two devices: one call per device; here shard_map, each device seeing its row).
// Run with TESSEL_CPU_DEVICES=2 or more. tests/host/seed_examples_test.cpp checks the output.
#include <algorithm>
#include <iostream>
#include <mutex>
#include <string>
#include <vector>

#include "tessel/tessel.h"

namespace ts = tessel;
namespace host = tessel::host;

// LAPACK (shipped with OpenBLAS): eigenvalues (wr + i·wi) of a general n×n matrix. The
// trailing lengths are the Fortran character arguments' hidden lengths.
extern "C" void sgeev_(const char* jobvl, const char* jobvr, const int* n, float* a, const int* lda, float* wr,
                       float* wi, float* vl, const int* ldvl, float* vr, const int* ldvr, float* work,
                       const int* lwork, int* info, size_t jobvl_len, size_t jobvr_len);
extern "C" void dgeev_(const char* jobvl, const char* jobvr, const int* n, double* a, const int* lda, double* wr,
                       double* wi, double* vl, const int* ldvl, double* vr, const int* ldvr, double* work,
                       const int* lwork, int* info, size_t jobvl_len, size_t jobvr_len);

namespace host_callback_call {

template <class T> void geev(int n, T* a, T* wr, T* wi, int* info) {
  const int lwork = 8 * n, one = 1;
  std::vector<T> work(static_cast<size_t>(lwork));
  if constexpr (std::is_same_v<T, float>)
    sgeev_("N", "N", &n, a, &n, wr, wi, nullptr, &one, nullptr, &one, work.data(), &lwork, info, 1, 1);
  else
    dgeev_("N", "N", &n, a, &n, wr, wi, nullptr, &one, nullptr, &one, work.data(), &lwork, info, 1, 1);
}

/// Eigenvalues of each (d, d) matrix of `m` (shape (..., d, d)), as an array of shape
/// (..., d) and m's dtype — np.linalg.eigvals on the host. A real matrix may have complex
/// eigenvalues, which an array of m's dtype cannot hold: this returns their real parts, so
/// call it with matrices whose eigenvalues are real (symmetric or triangular ones). They are
/// sorted (LAPACK's order is unspecified) so that the output is reproducible.
template <class T> ts::Array eigvals(const ts::Array& m) {
  const int64_t d = m.dim(-1);
  std::vector<T> values = m.to_vector<T>(), eig;
  for (size_t at = 0; at < values.size(); at += size_t(d * d)) {
    // LAPACK reads column-major, i.e. the transpose, which has the same eigenvalues.
    const auto first = values.begin() + static_cast<int64_t>(at);
    std::vector<T> a(first, first + d * d), wr(static_cast<size_t>(d)), wi(static_cast<size_t>(d));
    int info = 0;
    geev<T>(int(d), a.data(), wr.data(), wi.data(), &info);
    if (info != 0) throw ts::ValueError("host_eig: LAPACK ?geev failed with info=" + std::to_string(info));
    std::sort(wr.begin(), wr.end());
    eig.insert(eig.end(), wr.begin(), wr.end());
  }
  ts::Shape shape = m.shape();
  shape.pop_back();
  return ts::Array(eig, shape);
}

/// This function runs on the host.
ts::Array host_eig(const ts::Array& m) {
  if (m.dtype() == ts::DType::float32) return eigvals<float>(m);
  if (m.dtype() == ts::DType::float64) return eigvals<double>(m);
  throw ts::DTypeError("host_eig: expects float32 or float64 matrices, got " + m.aval().to_string());
}

/// This function is used in tessel: it sends `m` to the host, asking it to call host_eig
/// and return the result, whose shape and dtype it states (the device code is compiled for
/// them): given an input of shape (..., d, d), eig's output has shape (..., d).
ts::Array device_fun(const ts::Array& m) {
  ts::Shape result = m.shape();
  result.pop_back();
  return host::call(host_eig, m, {.result_shape = ts::ShapeDtype(result, m.dtype()), .name = "host_eig"});
}

void run_host_eig(std::ostream& out) {
  // An upper triangular matrix (eigenvalues: its diagonal) and a symmetric one (2 - √2, 2,
  // 2 + √2), in one batch.
  const ts::Array m(std::vector<double>{1, 2, 3, 0, 4, 5, 0, 0, 6,  //
                                        2, 1, 0, 1, 2, 1, 0, 1, 2},
                    {2, 3, 3});
  out << "# jit(device_fun)(m), m of shape (2, 3, 3)\n" << ts::jit(device_fun)(m) << "\n";
  const ts::Array m32(std::vector<float>{3, 1, 0, 2}, {2, 2});
  out << "# jit(device_fun)(m32), a float32 triangular matrix\n" << ts::jit(device_fun)(m32) << "\n";
}

/// host_sin with call_with_device: the function gets the device the values come from.
/// Callbacks of different devices run at the same time: the print is guarded.
void run_host_sin(std::ostream& out) {
  std::mutex print_mutex;
  auto host_sin = [&](const ts::Array& x, const ts::Device& device) {
    {
      std::lock_guard lock(print_mutex);
      out << "Invoking host_sin with " << ts::shape_to_string(x.shape()) << " on " << device << "\n";
    }
    return ts::sin(x);
  };
  // jax.pmap maps over the leading dimension, one row per device: shard_map over a mesh of
  // two devices, each device taking its (1, 4) row as a (4,) vector.
  const ts::Mesh mesh = ts::make_mesh({2}, {"i"});
  auto per_device = [&](const ts::Array& row) {
    const ts::Array x = row.reshape({row.dim(-1)});
    return host::call(host_sin, x, {.result_shape = x.aval(), .call_with_device = true, .name = "host_sin"})
        .reshape(row.shape());
  };
  out << "# pmap(call(host_sin))(np.ones((2, 4))) prints (in arbitrary order)\n";
  const ts::Array result = ts::shard_map(per_device, mesh, {ts::P("i")}, {ts::P("i")})(ts::ones({2, 4}, ts::f32));
  result.block_until_ready();  // the calls have run
  out << "# result\n" << result << "\n";
}

}  // namespace host_callback_call

#ifndef TESSEL_SEED_EXAMPLE_NO_MAIN
int main() {
  host_callback_call::run_host_eig(std::cout);
  host_callback_call::run_host_sin(std::cout);
  return 0;
}
#endif
