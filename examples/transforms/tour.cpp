// Runs the code samples of docs/transformations.md and docs/control_flow.md, in order, and
// prints what each computes (the pages quote this output). Each section is one block; its
// body is the sample as the page shows it. Run: build/examples/transforms/transforms_tour
#include <iostream>
#include <utility>

#include <tessel/tessel.h>

namespace ts = tessel;

struct Params {
  ts::Array w, b;
};
TESSEL_TREE(Params, w, b)

namespace {

void section(const char* name) { std::cout << "\n## " << name << "\n"; }

}  // namespace

int main() {
  const ts::Array x = ts::Array({0.0f, 1.0f, 2.0f});

  section("jvp");
  {
    auto f = [](const ts::Array& x) { return ts::sin(x) * x; };
    auto [y, dy] = ts::jvp(f, x, ts::ones_like(x));  // dy = (cos(x) x + sin(x)) * 1
    std::cout << y << "\n" << dy << "\n";

    // Several arguments: primals and tangents are tuples.
    auto g = [](const ts::Array& a, const ts::Array& b) { return a * b; };
    auto [z, dz] = ts::jvp(g, std::tuple{x, x}, std::tuple{ts::ones_like(x), ts::zeros_like(x)});
    std::cout << dz << "\n";  // = b
  }

  section("linearize");
  {
    auto f = [](const ts::Array& x) { return ts::sin(x) * x; };
    auto [y, f_jvp] = ts::linearize(f, x);  // runs sin(x) * x once
    std::cout << f_jvp(ts::ones_like(x)) << "\n" << f_jvp(2.0f * ts::ones_like(x)) << "\n";
  }

  section("vjp");
  {
    ts::Array a = ts::ones({2, 3}, ts::f32), b = ts::ones({3, 4}, ts::f32);
    auto [out, pullback] = ts::vjp([](const ts::Array& a, const ts::Array& b) { return ts::matmul(a, b); }, a, b);
    auto [ga, gb] = pullback(ts::ones_like(out));  // a std::tuple for two arguments
    std::cout << ga << "\n" << gb << "\n";
  }

  section("grad");
  {
    auto loss = [](const ts::Array& w, const ts::Array& x) { return ts::sum(ts::square(x * w)); };
    ts::Array w = ts::Array({1.0f, 2.0f, 3.0f});
    ts::Array gw = ts::grad(loss)(w, x);                 // d/dw (argument 0)
    auto [gw2, gx] = ts::grad<0, 1>(loss)(w, x);         // both: a std::tuple
    auto [value, gw3] = ts::value_and_grad(loss)(w, x);  // (loss, d/dw)
    std::cout << gw << "\n" << gx << "\n" << value << "\n";

    // has_aux: the function returns (scalar, aux); aux comes back untouched.
    auto loss_aux = [](const ts::Array& w, const ts::Array& x) {
      ts::Array pred = x * w;
      return std::make_pair(ts::sum(ts::square(pred)), pred);
    };
    auto [g, pred] = ts::grad(loss_aux, {.has_aux = true})(w, x);
    auto [value_aux, g2] = ts::value_and_grad(loss_aux, {.has_aux = true})(w, x);  // ((value, aux), grad)
    std::cout << g << "\n" << pred << "\n" << value_aux.first << "\n";

    // Trees: the gradient has the argument's type.
    auto mse = [](const Params& p, const ts::Array& x) { return ts::mean(ts::square(p.w * x + p.b)); };
    Params p{ts::Array({0.5f, -1.0f, 2.0f}), ts::Array(0.1f).astype(ts::f32)};
    Params gp = ts::grad(mse)(p, x);
    std::cout << gp.w << "\n" << gp.b << "\n";

    // Higher order and under jit.
    auto f = [](const ts::Array& x) { return ts::sum(ts::sin(x)); };
    std::cout << ts::grad([&](const ts::Array& x) { return ts::sum(ts::grad(f)(x)); })(x) << "\n";  // -sin(x)
    std::cout << ts::jit(ts::grad(f))(x) << "\n";                                                     // cos(x)
  }

  section("jacobians");
  {
    auto f = [](const ts::Array& x) { return ts::sin(x) * ts::sum(x); };
        std::cout << ts::jacfwd(f)(x) << "\n" << ts::jacrev(f)(x) << "\n";
    std::cout << ts::hessian([](const ts::Array& x) { return ts::sum(x * x * x); })(x) << "\n";  // diag(6x)
  }

  section("linear_transpose");
  {
    auto running_total = [](const ts::Array& v) { return 2.0f * ts::cumsum(v, 0); };
    auto transposed = ts::linear_transpose(running_total, x);  // x only gives the shape
    std::cout << transposed(ts::Array({1.0f, 0.0f, 0.0f})) << "\n";  // the first row of the matrix
  }

  section("stop_gradient");
  {
    auto f = [](const ts::Array& x) { return ts::sum(x * ts::stop_gradient(x)); };
    std::cout << ts::grad(f)(x) << "\n";  // x, not 2x
  }

  section("vmap");
  {
    auto dot = [](const ts::Array& a, const ts::Array& b) { return ts::sum(a * b); };
    ts::Array as = ts::ones({5, 3}, ts::f32), bs = ts::ones({3, 5}, ts::f32), v = ts::Array({1.0f, 2.0f, 3.0f});
    std::cout << ts::vmap(dot)(as, as) << "\n";                                             // shape (5,)
    std::cout << ts::vmap(dot, {0, ts::none})(as, v) << "\n";                               // v is not mapped
    std::cout << ts::vmap(dot, {0, 1})(as, bs) << "\n";                                     // map axis 1 of bs

    // out_axes: where the mapped axis goes in the output.
    auto outer = ts::vmap([](const ts::Array& a) { return a * 2.0f; }, {0}, {1});
    std::cout << outer(as).shape()[0] << "x" << outer(as).shape()[1] << "\n";  // (3, 5)

    // axis_size: nothing is mapped, the function runs 4 times.
    auto rows = ts::vmap([](const ts::Array& a) { return a + 1.0f; }, {ts::none}, {0}, 4);
    std::cout << rows(v) << "\n";  // (4, 3)

    // Nesting and composition.
    auto pairwise = ts::vmap(ts::vmap(dot, {ts::none, 0}), {0, ts::none});  // (5, 5) of dots
    std::cout << pairwise(as, as).shape()[0] << "x" << pairwise(as, as).shape()[1] << "\n";
    auto per_example_grads = ts::jit(ts::vmap(ts::grad(dot), {ts::none, 0}));
    std::cout << per_example_grads(v, as) << "\n";  // d/da dot(a, b_i) = b_i
  }

  section("custom_jvp");
  {
    // log(1 + exp(x)) with a stable derivative sigmoid(x) given by hand.
    auto softplus = ts::custom_jvp(
        [](const ts::Array& x) { return ts::log1p(ts::exp(x)); },
        [](const std::tuple<ts::Array>& primals, const std::tuple<ts::Array>& tangents) {
          const ts::Array& x = std::get<0>(primals);
          const ts::Array& t = std::get<0>(tangents);
          ts::Array y = ts::log1p(ts::exp(x));
          return std::make_pair(y, t / (1.0f + ts::exp(-x)));
        });
    std::cout << ts::grad([&](const ts::Array& x) { return ts::sum(softplus(x)); })(x) << "\n";
    std::cout << ts::jit(ts::vmap(softplus))(x) << "\n";
  }

  section("custom_vjp");
  {
    // Clip the gradient of the identity to [-1, 1].
    auto clip_grad = ts::custom_vjp([](const ts::Array& x) { return x; },
                                    [](const ts::Array& x) { return std::make_pair(x, std::tuple<>()); },
                                    [](const std::tuple<>&, const ts::Array& ct) { return ts::clip(ct, -1.0f, 1.0f); });
    auto f = [&](const ts::Array& x) { return ts::sum(10.0f * clip_grad(x)); };
    std::cout << ts::grad(f)(x) << "\n";  // 1, not 10

    // Residuals may be any tree.
    auto scaled_sin = ts::custom_vjp(
        [](const ts::Array& x, const ts::Array& s) { return s * ts::sin(x); },
        [](const ts::Array& x, const ts::Array& s) {
          return std::make_pair(s * ts::sin(x), std::make_tuple(ts::cos(x), ts::sin(x), s));
        },
        [](const std::tuple<ts::Array, ts::Array, ts::Array>& r, const ts::Array& ct) {
          auto [c, sn, s] = r;
          return std::make_tuple(ct * s * c, ts::sum(ct * sn));  // one cotangent per argument
        });
    auto [gx, gs] = ts::grad<0, 1>([&](const ts::Array& x, const ts::Array& s) { return ts::sum(scaled_sin(x, s)); })(
        x, ts::Array(2.0f).astype(ts::f32));
    std::cout << gx << "\n" << gs << "\n";
  }

  section("checkpoint");
  {
    auto block = [](const ts::Array& w, const ts::Array& h) { return ts::tanh(ts::matmul(h, w)); };
    auto saved_dots = ts::checkpoint(block, {.policy = ts::CheckpointPolicy::dots_saveable});
    auto recompute_all = ts::checkpoint(block);  // nothing_saveable
    ts::Array w = ts::eye(3, std::nullopt, 0, ts::f32) * 0.5f, h = ts::ones({2, 3}, ts::f32);
    auto loss = [&](const ts::Array& w) { return ts::sum(recompute_all(w, saved_dots(w, h))); };
    std::cout << ts::grad(loss)(w) << "\n";
    std::cout << ts::make_program(ts::grad(loss), w) << "\n";  // the backward pass holds checkpoint[...] equations
  }

  section("control flow");
  {
    auto f = [](const ts::Array& x) {
      return ts::cond(ts::sum(x) > 0.0f, [](const ts::Array& a) { return ts::sin(a); },
                      [](const ts::Array& a) { return a * 2.0f; }, x);
    };
    std::cout << f(x) << " " << f(-x) << "\n";
    std::cout << ts::grad([&](const ts::Array& x) { return ts::sum(f(x)); })(x) << "\n";  // cos(x)
    std::cout << ts::vmap(f)(ts::stack({x, -x})) << "\n";                                  // batched predicate

    std::vector<std::function<ts::Array(const ts::Array&)>> branches = {
        [](const ts::Array& a) { return a; }, [](const ts::Array& a) { return -a; },
        [](const ts::Array& a) { return a * a; }};
    std::cout << ts::switch_(ts::Array(2), branches, x) << "\n";  // x * x

    // while_loop: forward mode and vmap only.
    auto grow = [](const ts::Array& x) {
      return ts::while_loop([](const ts::Array& v) { return ts::sum(v) < 10.0f; },
                            [](const ts::Array& v) { return v * 1.5f; }, x + 1.0f);
    };
    std::cout << grow(x) << " " << ts::jvp(grow, x, ts::ones_like(x)).second << "\n";

    // fori_loop with int bounds is a scan: reverse mode works.
    auto power = [](const ts::Array& x) {
      return ts::fori_loop(0, 3, [](const ts::Array& i, const ts::Array& v) { return v * 2.0f + ts::astype(i, ts::f32); }, x);
    };
    std::cout << power(x) << " " << ts::grad([&](const ts::Array& x) { return ts::sum(power(x)); })(x) << "\n";  // 8

    // scan: carry and stacked outputs (a cumulative product here).
    auto [total, partial] = ts::scan(
        [](const ts::Array& c, const ts::Array& xi) { return std::make_pair(c * xi, c * xi); }, ts::Array(1.0f),
        ts::Array({1.0f, 2.0f, 3.0f, 4.0f}));
    std::cout << total << " " << partial << "\n";
    auto [last, rev] = ts::scan([](const ts::Array& c, const ts::Array& xi) { return std::make_pair(c + xi, c + xi); },
                                ts::Array(0.0f), ts::Array({1.0f, 2.0f, 3.0f}), {.reverse = true});
    std::cout << last << " " << rev << "\n";  // ys keep their order: 6 5 3
  }

  section("printing programs");
  {
    auto f = [](const ts::Array& x) { return ts::sum(ts::sin(x) * 2.0f); };
    std::cout << ts::make_program(ts::grad(f), x) << "\n";           // as traced
    std::cout << ts::jit(ts::grad(f)).lower(x).as_text() << "\n";    // simplified, what jit compiles
    std::cout << ts::jit(ts::grad(f)).lower(x).compile().as_text() << "\n";  // plus the buffer plan
  }

  section("errors");
  {
    auto show = [](auto&& run) {
      try {
        run();
      } catch (const ts::Error& e) {
        std::cout << e.what() << "\n";
      }
    };
    show([&] { ts::grad([](const ts::Array& x) { return ts::sin(x); })(x); });
    show([&] { ts::vmap([](const ts::Array& a, const ts::Array& b) { return a + b; })(ts::ones({3, 2}), ts::ones({4, 2})); });
    show([&] {
      auto grow = [](const ts::Array& x) {
        return ts::while_loop([](const ts::Array& v) { return ts::sum(v) < 10.0f; },
                              [](const ts::Array& v) { return v * 1.5f; }, x + 1.0f);
      };
      ts::grad([&](const ts::Array& x) { return ts::sum(grow(x)); })(x);
    });
    show([&] { ts::grad([](const ts::Array& i) { return ts::sum(ts::astype(i, ts::f32)); })(ts::arange(3, ts::i32)); });
    show([&] {
      auto bad = ts::custom_jvp([](const ts::Array& x) { return ts::sin(x); },
                                [](const std::tuple<ts::Array>& p, const std::tuple<ts::Array>& t) {
                                  return std::make_pair(ts::sin(std::get<0>(p)), ts::astype(std::get<0>(t), ts::f64));
                                });
      ts::jvp(bad, x, ts::ones_like(x));
    });
    show([&] {
      auto cv = ts::custom_vjp([](const ts::Array& x) { return x; },
                               [](const ts::Array& x) { return std::make_pair(x, std::tuple<>()); },
                               [](const std::tuple<>&, const ts::Array& ct) { return ct; });
      ts::jvp(cv, x, ts::ones_like(x));
    });
  }
  return 0;
}
