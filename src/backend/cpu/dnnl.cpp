// oneDNN convolutions (backend/cpu/dnnl.h).
#include "backend/cpu/dnnl.h"

#include <cstdlib>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

namespace tessel::cpu::dnnl {
namespace {

namespace dn = ::dnnl;
using Desc = dn::memory::desc;

dn::engine& engine() {
  static dn::engine* e = new dn::engine(dn::engine::kind::cpu, 0);  // never destroyed: kernels may run during exit
  return *e;
}

Desc user_desc(const TensorView& t) { return Desc(t.dims, dn::memory::data_type::f32, t.strides); }
Desc any_desc(const TensorView& t) { return Desc(t.dims, dn::memory::data_type::f32, dn::memory::format_tag::any); }

/// A primitive for one problem with the layouts it reads and writes (which may differ from
/// the caller's: those tensors go through reorders).
struct Plan {
  dn::primitive prim;
  Desc src, weights, dst, scratch;
  std::string impl;
};

/// The primitive for `p`; `caller_layout`: src and dst as the caller holds them (weights,
/// small, always in oneDNN's chosen layout), else every tensor in oneDNN's choice. Null
/// where oneDNN has no implementation.
std::shared_ptr<Plan> make_plan(const ConvProblem& p, bool caller_layout) {
  const Desc s = caller_layout ? user_desc(p.src) : any_desc(p.src), w = any_desc(p.weights),
             d = caller_layout ? user_desc(p.dst) : any_desc(p.dst);
  dn::primitive_attr attr;
  attr.set_scratchpad_mode(dn::scratchpad_mode::user);
  const auto alg = dn::algorithm::convolution_direct;
  try {
    const dn::convolution_forward::primitive_desc fwd(
        dn::convolution_forward::desc(dn::prop_kind::forward_training, alg, s, w, d, p.strides, p.dilates, p.pad_l,
                                      p.pad_r),
        attr, engine());
    auto plan = std::make_shared<Plan>();
    switch (p.pass) {
      case ConvPass::kForward:
        *plan = {dn::convolution_forward(fwd), fwd.src_desc(), fwd.weights_desc(), fwd.dst_desc(),
                 fwd.scratchpad_desc(), fwd.impl_info_str()};
        break;
      case ConvPass::kBackwardData: {
        const dn::convolution_backward_data::primitive_desc pd(
            dn::convolution_backward_data::desc(alg, s, w, d, p.strides, p.dilates, p.pad_l, p.pad_r), attr, engine(),
            fwd);
        *plan = {dn::convolution_backward_data(pd), pd.diff_src_desc(), pd.weights_desc(), pd.diff_dst_desc(),
                 pd.scratchpad_desc(), pd.impl_info_str()};
        break;
      }
      case ConvPass::kBackwardWeights: {
        const dn::convolution_backward_weights::primitive_desc pd(
            dn::convolution_backward_weights::desc(alg, s, w, d, p.strides, p.dilates, p.pad_l, p.pad_r), attr,
            engine(), fwd);
        *plan = {dn::convolution_backward_weights(pd), pd.src_desc(), pd.diff_weights_desc(), pd.diff_dst_desc(),
                 pd.scratchpad_desc(), pd.impl_info_str()};
        break;
      }
    }
    return plan;
  } catch (const dn::error&) {
    return nullptr;
  }
}

bool is_reference(const std::shared_ptr<Plan>& plan) { return !plan || plan->impl.find("ref") != std::string::npos; }

std::string key_of(const ConvProblem& p) {
  std::string k(1, char('0' + int(p.pass)));
  auto add = [&](const std::vector<int64_t>& v) {
    for (auto x : v) k += std::to_string(x) + ',';
    k += ';';
  };
  for (const TensorView* t : {&p.src, &p.weights, &p.dst}) add(t->dims), add(t->strides);
  add(p.strides), add(p.dilates), add(p.pad_l), add(p.pad_r);
  return k;
}

/// The cached plan of `p` (null: unsupported): the caller's layouts when oneDNN has a
/// non-reference implementation for them, else oneDNN's own layouts.
std::shared_ptr<Plan> plan_for(const ConvProblem& p) {
  static std::mutex& mu = *new std::mutex;
  static auto& cache = *new std::unordered_map<std::string, std::shared_ptr<Plan>>;
  const std::string key = key_of(p);
  {
    std::lock_guard lock(mu);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  std::shared_ptr<Plan> plan = make_plan(p, true);
  if (is_reference(plan)) plan = make_plan(p, false);
  if (is_reference(plan)) plan = nullptr;
  std::lock_guard lock(mu);
  return cache.emplace(key, plan).first->second;
}

struct FreeDeleter {
  void operator()(void* q) const { std::free(q); }
};
using Scratch = std::unique_ptr<void, FreeDeleter>;

Scratch allocate(size_t bytes) {
  const size_t rounded = (bytes + 63) / 64 * 64;
  return Scratch(std::aligned_alloc(64, rounded == 0 ? 64 : rounded));
}

/// A tensor bound for the primitive: the caller's buffer, or a scratch buffer in the
/// primitive's layout (filled from the caller's when read, copied back when written).
struct Bound {
  dn::memory user, mem;
  Scratch scratch;
};

Bound bind(const Desc& want, const TensorView& view, float* data, bool read, dn::stream& st) {
  const Desc user = user_desc(view);
  Bound b{dn::memory(user, engine(), data), {}, {}};
  if (want == user) {
    b.mem = b.user;
    return b;
  }
  b.scratch = allocate(want.get_size());
  b.mem = dn::memory(want, engine(), b.scratch.get());
  if (read) dn::reorder(b.user, b.mem).execute(st, b.user, b.mem);
  return b;
}

}  // namespace

bool convolution(const ConvProblem& p, const ConvBuffers& buf) {
  const std::shared_ptr<Plan> plan = plan_for(p);
  if (!plan) return false;
  dn::stream st(engine());
  const bool fwd = p.pass == ConvPass::kForward, bwd_w = p.pass == ConvPass::kBackwardWeights;
  Bound src = bind(plan->src, p.src, buf.src, p.pass != ConvPass::kBackwardData, st);
  Bound w = bind(plan->weights, p.weights, buf.weights, !bwd_w, st);
  Bound dst = bind(plan->dst, p.dst, buf.dst, !fwd, st);
  Scratch scratch = allocate(plan->scratch.get_size());
  const dn::memory scratch_mem(plan->scratch, engine(), scratch.get());
  std::unordered_map<int, dn::memory> args{{DNNL_ARG_SCRATCHPAD, scratch_mem}};
  switch (p.pass) {
    case ConvPass::kForward:
      args.insert({{DNNL_ARG_SRC, src.mem}, {DNNL_ARG_WEIGHTS, w.mem}, {DNNL_ARG_DST, dst.mem}});
      break;
    case ConvPass::kBackwardData:
      args.insert({{DNNL_ARG_DIFF_SRC, src.mem}, {DNNL_ARG_WEIGHTS, w.mem}, {DNNL_ARG_DIFF_DST, dst.mem}});
      break;
    case ConvPass::kBackwardWeights:
      args.insert({{DNNL_ARG_SRC, src.mem}, {DNNL_ARG_DIFF_WEIGHTS, w.mem}, {DNNL_ARG_DIFF_DST, dst.mem}});
      break;
  }
  plan->prim.execute(st, args);
  // The written tensor goes back to the caller's layout.
  Bound& out = fwd ? dst : bwd_w ? w : src;
  if (out.scratch) dn::reorder(out.mem, out.user).execute(st, out.mem, out.user);
  st.wait();
  return true;
}

std::string convolution_impl(const ConvProblem& p) {
  const std::shared_ptr<Plan> plan = plan_for(p);
  return plan ? plan->impl : std::string();
}

}  // namespace tessel::cpu::dnnl
