// Runs the code samples of docs/sharding.md, in order, and prints what each shows (the page
// quotes this output): arrays laid out over a 2x4 mesh, a data-parallel jit, the canonical
// reshard, a matmul split on its contracting dimension, and the per-device programs with
// the communication the partitioner inserted, loops partitioned (a stencil exchanging halo
// rows). Needs 8 devices:
//   TESSEL_CPU_DEVICES=8 build/examples/sharding/sharding_tour
// Checks every partitioned result against the same computation on one device; prints
// "sharding tour: ok" at the end, or exits 1.
#include <cmath>
#include <iostream>
#include <string>

#include <tessel/tessel.h>

namespace ts = tessel;

namespace {

void section(const char* name) { std::cout << "\n## " << name << "\n"; }

int failures = 0;

// `got` (any layout) equals `want` to a relative tolerance.
void check(const char* what, const ts::Array& got, const ts::Array& want, float tol = 1e-5f) {
  const auto x = got.to_vector<float>(), y = want.to_vector<float>();
  bool ok = got.shape() == want.shape();
  for (size_t i = 0; ok && i < x.size(); ++i) ok = std::abs(x[i] - y[i]) <= tol * (1 + std::abs(y[i]));
  if (!ok) {
    std::cout << "MISMATCH in " << what << "\n";
    ++failures;
  }
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

void expect_count(const char* what, const std::string& text, const std::string& op, int n) {
  if (count(text, op) != n) {
    std::cout << "EXPECTED " << n << " x " << op << " in " << what << "\n";
    ++failures;
  }
}

}  // namespace

int main() {
  if (ts::devices().size() < 8) {
    std::cerr << "sharding_tour needs 8 devices: run it with TESSEL_CPU_DEVICES=8\n";
    return 1;
  }

  section("meshes and shardings");
  ts::Mesh mesh = ts::make_mesh({2, 4}, {"x", "y"});  // devices 0..7, row-major
  ts::Array a = ts::arange(0.0, 60.0, 1.0, ts::f32).reshape({6, 10});
  ts::Array as = ts::device_put(a, ts::NamedSharding(mesh, ts::P("x", "y")));
  std::cout << mesh << "\n" << as.sharding() << "\n";
  // 10 columns over 4 devices: pieces of ceil(10 / 4) = 3 columns, the last one 1 column.
  for (const ts::Shard& s : as.addressable_shards())
    std::cout << "cpu:" << s.device.id() << " rows [" << s.index[0].first << ", " << s.index[0].second << ") cols ["
              << s.index[1].first << ", " << s.index[1].second << ") shape " << ts::shape_to_string(s.data.shape()) << "\n";
  check("device_put", as, a);

  section("resharding");
  {
    ts::Array cols = ts::device_put(as, ts::NamedSharding(mesh, ts::P(ts::none, ts::axes("x", "y"))));
    ts::Array one = ts::device_put(cols, ts::SingleDeviceSharding(ts::devices()[3]));
    std::cout << cols.sharding() << "\n" << one.sharding() << "\n";
    check("reshard", cols, a);
    check("to one device", one, a);
  }

  section("data-parallel jit");
  {
    // A batch of 64 rows split over all 8 devices; the weights are replicated.
    ts::NamedSharding batch(mesh, ts::P(ts::axes("x", "y"), ts::none));
    ts::NamedSharding replicated(mesh, ts::P());
    auto layer = [](const ts::Array& x, const ts::Array& w) { return ts::sum(ts::tanh(ts::matmul(x, w)), {0}); };
    auto f = ts::jit(layer, {.in_shardings = {batch, replicated}});
    ts::Array x = ts::sin(ts::arange(0.0, 64.0 * 16.0, 1.0, ts::f32)).reshape({64, 16});
    ts::Array w = ts::cos(ts::arange(0.0, 16.0 * 4.0, 1.0, ts::f32)).reshape({16, 4}) * 0.1f;
    ts::Array y = f(x, w);
    std::cout << y.sharding() << "\n";
    const std::string text = f.lower(x, w).compile().as_text();
    std::cout << text << "\n";
    check("data-parallel layer", y, layer(x, w), 1e-4f);
    expect_count("data-parallel layer", text, "all_reduce", 1);
  }

  section("the canonical reshard");
  {
    ts::Mesh line = ts::make_mesh({8}, {"x"});
    auto f = ts::jit([](const ts::Array& v) { return v; },
                     {.in_shardings = {ts::NamedSharding(line, ts::P("x", ts::none))},
                      .out_shardings = {ts::NamedSharding(line, ts::P(ts::none, "x"))}});
    ts::Array v = ts::arange(0.0, 16.0 * 24.0, 1.0, ts::f32).reshape({16, 24});
    const std::string text = f.lower(v).compile().as_text();
    std::cout << text << "\n";
    check("canonical reshard", f(v), v);
    expect_count("canonical reshard", text, "all_to_all", 1);
  }

  section("contracting dimension");
  {
    ts::Mesh line = ts::make_mesh({8}, {"x"});
    ts::NamedSharding by_cols(line, ts::P(ts::none, "x")), by_rows(line, ts::P("x", ts::none));
    auto mm = [](const ts::Array& p, const ts::Array& q) { return ts::matmul(p, q); };
    ts::Array p = ts::arange(0.0, 8.0 * 64.0, 1.0, ts::f32).reshape({8, 64}) * 0.01f;
    ts::Array q = ts::arange(0.0, 64.0 * 16.0, 1.0, ts::f32).reshape({64, 16}) * 0.01f;
    auto f = ts::jit(mm, {.in_shardings = {by_cols, by_rows}});
    auto g = ts::jit(mm, {.in_shardings = {by_cols, by_rows}, .out_shardings = {by_rows}});
    const std::string tf = f.lower(p, q).compile().as_text(), tg = g.lower(p, q).compile().as_text();
    std::cout << tf << "\n" << tg << "\n";
    check("matmul, all_reduce", f(p, q), mm(p, q), 1e-4f);
    check("matmul, reduce_scatter", g(p, q), mm(p, q), 1e-4f);
    expect_count("matmul", tf, "all_reduce", 1);
    expect_count("matmul with split result", tg, "reduce_scatter", 1);
  }

  section("uneven sizes");
  {
    ts::Mesh line = ts::make_mesh({8}, {"x"});
    auto f = ts::jit([](const ts::Array& v) { return ts::max(v, {0}); }, {.in_shardings = {ts::NamedSharding(line, ts::P("x"))}});
    ts::Array v = -ts::arange(1.0, 14.0, 1.0, ts::f32);  // 13 elements over 8 devices: pieces of 2, padded
    std::cout << f(v) << "\n" << f.lower(v).compile().as_text() << "\n";
    check("max over a padded dimension", f(v), ts::max(v, {0}));
  }

  section("with_sharding_constraint");
  {
    ts::Mesh line = ts::make_mesh({8}, {"x"});
    ts::NamedSharding split(line, ts::P("x"));
    auto f = ts::jit([&](const ts::Array& v) {
      ts::Array t = ts::with_sharding_constraint(ts::exp(v * 0.1f), split);  // the argument is not laid out
      return t / ts::sum(t);
    });
    ts::Array v = ts::arange(0.0, 32.0, 1.0, ts::f32);
    ts::Array r = f(v);
    std::cout << r.sharding() << "\n" << f.lower(v).compile().as_text() << "\n";
    ts::Array e = ts::exp(v * 0.1f);
    check("softmax", r, e / ts::sum(e));
  }

  section("eager operations");
  {
    ts::Array rows = ts::device_put(a, ts::NamedSharding(mesh, ts::P("x")));
    ts::Array e = ts::exp(rows * 0.01f);    // partitioned: each device its rows
    ts::Array s = ts::sum(e, {0});          // partial sums and an all_reduce
    std::cout << e.sharding() << "\n" << s.sharding() << "\n";
    check("eager exp", e, ts::exp(a * 0.01f));
    check("eager sum", s, ts::sum(ts::exp(a * 0.01f), {0}), 1e-5f);
  }

  section("control flow");
  {
    // A loop over a split array: the body runs on each device's rows, nothing moves.
    ts::Mesh line = ts::make_mesh({8}, {"x"});
    ts::NamedSharding rows(line, ts::P("x", ts::none));
    auto relax = [](const ts::Array& u0) {
      return ts::fori_loop(0, 10, [](const ts::Array&, const ts::Array& u) { return u * 0.5f + ts::sin(u) * 0.25f; }, u0);
    };
    auto f = ts::jit(relax, {.in_shardings = {rows}});
    ts::Array u = ts::reshape(ts::arange(0.0, 1024.0, 1.0, ts::f32), {64, 16}) * 0.01f;
    const std::string text = f.lower(u).compile().as_text();
    std::cout << text << "\n";
    expect_count("fori_loop", text, "all_gather", 0);
    check("fori_loop", f(u), relax(u));
    // A stencil in a loop: one halo row from each neighbour per step.
    auto stencil = [](const ts::Array& u0) {
      return ts::fori_loop(0, 10, [](const ts::Array&, const ts::Array& v) {
        return v * 0.5f + ts::roll(v, -1, 0) * 0.25f + ts::roll(v, 1, 1) * 0.25f;
      }, u0);
    };
    auto g = ts::jit(stencil, {.in_shardings = {rows}});
    const std::string halo = g.lower(u).compile().as_text();
    expect_count("stencil", halo, "all_gather", 0);
    expect_count("stencil", halo, "= collective_permute[", 1);
    check("stencil", g(u), stencil(u));
  }

  section("errors");
  {
    auto show = [](const auto& what) {
      try {
        what();
        std::cout << "NO ERROR\n";
        ++failures;
      } catch (const ts::ValueError& e) {
        std::cout << e.what() << "\n";
      }
    };
    ts::Mesh line = ts::make_mesh({8}, {"x"});
    ts::Mesh half = ts::make_mesh({4}, {"x"}, {ts::devices()[4], ts::devices()[5], ts::devices()[6], ts::devices()[7]});
    ts::Array v = ts::arange(0.0, 16.0, 1.0, ts::f32);
    show([&] { ts::NamedSharding(mesh, ts::P("z")); });
    show([&] { ts::NamedSharding(mesh, ts::P("x", "x")); });
    show([&] { ts::make_mesh({16}, {"x"}); });
    show([&] { ts::device_put(v, ts::NamedSharding(line, ts::P("x", ts::none))); });
    show([&] {  // an argument on the 8-device mesh, a sharding on the 4-device one
      ts::jit([](const ts::Array& t) { return t + 1.0f; }, {.in_shardings = {ts::NamedSharding(half, ts::P("x"))}})(
          ts::device_put(v, ts::NamedSharding(line, ts::P("x"))));
    });
    show([&] {  // committed to cpu:0, outside the mesh
      ts::jit([](const ts::Array& t) { return t + 1.0f; }, {.in_shardings = {ts::NamedSharding(half, ts::P("x"))}})(
          ts::device_put(v, ts::devices()[0]));
    });
    show([&] { ts::jit([](const ts::Array& t) { return t; }, {.in_shardings = {std::nullopt, std::nullopt}})(v); });
    show([&] {  // the carry enters split by rows, a constraint in the body splits it by columns
      ts::NamedSharding rows(line, ts::P("x", ts::none)), cols(line, ts::P(ts::none, "x"));
      auto body = [&](const ts::Array&, const ts::Array& c) { return ts::with_sharding_constraint(c * 2.0f, cols); };
      ts::jit([&](const ts::Array& t) { return ts::fori_loop(0, 2, body, t); }, {.in_shardings = {rows}})(
          ts::reshape(ts::arange(0.0, 256.0, 1.0, ts::f32), {16, 16}));
    });
  }

  if (failures) return 1;
  std::cout << "\nsharding tour: ok\n";
  return 0;
}
