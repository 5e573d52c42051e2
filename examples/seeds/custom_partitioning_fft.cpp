// The custom_partitioning seed in C++: `my_fft` computes an FFT along the last axis and
// keeps the sharding of the other (batch) axes. In the seed, plain jnp.fft.fft gathers its
// operand onto every device and slices the result back; tessel's fft primitive has its own
// factor rule (batch axes split, transformed axes whole), so here plain ts::fft::fft keeps
// the batch sharding too and the two programs are the same. Both give the same values,
// and both gather when the FFT axis itself is the sharded one. docs/custom_partitioning.md
// walks through it.
//
// Run: custom_partitioning_fft [--rows 32768] [--cols 1024] [--n1d 33554432]
// (TESSEL_CPU_DEVICES sets the number of virtual devices; the seed uses all of them.)
#include <cstdlib>
#include <iostream>
#include <string>

#include <tessel/tessel.h>

namespace ts = tessel;

namespace {

// For an N-D input, keeps the sharding of the first N-1 dimensions and replicates the last
// (the one the FFT runs along).
ts::Sharding supported_sharding(const ts::Sharding& sharding, const ts::ShardedShape& shape) {
  size_t rank = shape.shape.size();
  size_t keep = std::min(sharding.spec().size(), rank - 1);
  std::vector<ts::SpecEntry> names(sharding.spec().entries().begin(), sharding.spec().entries().begin() + long(keep));
  names.resize(rank);  // the rest: ts::none
  return ts::NamedSharding(sharding.mesh(), ts::P(names));
}

ts::PartitionResult partition(const ts::Mesh& mesh, const std::vector<ts::ShardedShape>& arg_shapes,
                              const std::vector<ts::ShardedShape>&) {
  ts::Sharding s = supported_sharding(arg_shapes[0].sharding, arg_shapes[0]);
  auto lower_fn = [](const std::vector<ts::Array>& xs) { return std::vector<ts::Array>{ts::fft::fft(xs[0])}; };
  return {mesh, lower_fn, /*result_shardings=*/{s}, /*arg_shardings=*/{s}};
}

std::vector<ts::Sharding> infer_sharding_from_operands(const ts::Mesh&, const std::vector<ts::ShardedShape>& arg_shapes,
                                                       const std::vector<ts::ShardedShape>&) {
  return {supported_sharding(arg_shapes[0].sharding, arg_shapes[0])};
}

bool mentions_gather_or_slice(const std::string& text) {
  return text.find("all_gather") != std::string::npos || text.find("dynamic_slice") != std::string::npos;
}

// Runs both versions on x sharded along its first axis. Returns false if their values
// disagree or either program gathers/slices when it should not (or the reverse).
bool compare(const char* title, const ts::Array& x, const ts::Sharding& s, bool gathers) {
  auto my_fft = ts::custom_partitioning([](const ts::Array& a) { return ts::fft::fft(a); }, {.name = "my_fft"});
  my_fft.def_partition({.partition = partition, .infer_sharding_from_operands = infer_sharding_from_operands});

  ts::Array y = ts::device_put(x, s);
  auto jit_my_fft = ts::jit(my_fft, {.in_shardings = {s}, .out_shardings = {s}});
  auto jit_fft =
      ts::jit([](const ts::Array& a) { return ts::fft::fft(a); }, {.in_shardings = {s}, .out_shardings = {s}});
  ts::Array a = jit_my_fft(y), b = jit_fft(y);
  std::cout << "## " << title << ": " << x.aval() << " sharded " << s.spec() << "\n";
  std::cout << "# my_fft\n" << a << "\n# ts::fft::fft\n" << b << "\n";
  std::cout << "my_fft result sharding: " << a.sharding() << "\n";
  // Both run the same FFT per row; allow for a different summation order anyway.
  double err = ts::max(ts::abs(a - b)).item<double>(), scale = ts::max(ts::abs(b)).item<double>();
  bool same = err <= 1e-5 * scale;
  std::cout << "values equal: " << (same ? "yes" : "NO") << "\n";
  bool mine = mentions_gather_or_slice(jit_my_fft.lower(y).compile().as_text());
  bool plain = mentions_gather_or_slice(jit_fft.lower(y).compile().as_text());
  std::cout << "all_gather or dynamic_slice in my_fft's program: " << (mine ? "yes" : "no") << "\n";
  std::cout << "all_gather or dynamic_slice in fft's program: " << (plain ? "yes" : "no") << "\n\n";
  return same && mine == gathers && plain == gathers;
}

int64_t flag(int argc, char** argv, const std::string& name, int64_t fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == name) return std::atoll(argv[i + 1]);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t rows = flag(argc, argv, "--rows", 32 * 1024), cols = flag(argc, argv, "--cols", 1024);
  const int64_t n1d = flag(argc, argv, "--n1d", 32 * 1024 * 1024);
  ts::Mesh mesh = ts::make_mesh({int64_t(ts::devices().size())}, {"x"});
  ts::Sharding s = ts::NamedSharding(mesh, ts::P("x"));
  ts::Array key = ts::random::key(0);
  // Real normal values as complex64, like the seed's np.random.randn(...).astype(complex64).
  ts::Array x2 = ts::random::normal(ts::random::fold_in(key, 2), {rows, cols}).astype(ts::DType::complex64);
  ts::Array x1 = ts::random::normal(ts::random::fold_in(key, 1), {n1d}).astype(ts::DType::complex64);
  std::cout << mesh << "\n\n";
  bool ok = compare("2-D: my_fft (and fft) keep the batch sharding", x2, s, /*gathers=*/false);
  ok &= compare("1-D: the FFT axis is the sharded one, so both gather", x1, s, /*gathers=*/true);
  std::cout << (ok ? "custom_partitioning seed: ok" : "custom_partitioning seed: FAILED") << "\n";
  return ok ? 0 : 1;
}
