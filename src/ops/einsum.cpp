// jnp.einsum: parses the subscripts, takes diagonals for indices repeated within one operand,
// sums out indices needed nowhere else, then contracts the operands pairwise from left to
// right with dot_general and transposes the result into the requested order.
#include <algorithm>
#include <cctype>
#include <map>

#include "ops/linalg.h"

namespace tessel::ops {
namespace {

// Index labels: letters are their character code; the dimensions an ellipsis stands for are
// kEllipsis + j, right-aligned across operands (so they broadcast like NumPy).
using Label = int;
using Labels = std::vector<Label>;
constexpr Label kEllipsis = 1000;

std::string label_name(Label l) {
  return l >= kEllipsis ? "... dimension " + std::to_string(l - kEllipsis) : "'" + std::string(1, char(l)) + "'";
}

struct Term {
  std::string text;
  Labels before, after;  // letters before and after "..."
  bool ellipsis = false;
};

Term parse_term(const std::string& spec, const std::string& t) {
  Term term{t, {}, {}, false};
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.compare(i, 3, "...") == 0) {
      if (term.ellipsis)
        throw ValueError("einsum: subscripts '" + t + "' in '" + spec + "' contain more than one ellipsis");
      term.ellipsis = true;
      i += 2;
    } else if (std::isalpha(static_cast<unsigned char>(t[i]))) {
      (term.ellipsis ? term.after : term.before).push_back(Label(t[i]));
    } else {
      throw ValueError("einsum: invalid character '" + std::string(1, t[i]) + "' in subscripts '" + spec +
                       "'; use letters a-z, A-Z, ',' between operands, '->' before the output and '...'");
    }
  }
  return term;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> r(1);
  for (char ch : s) {
    if (ch == sep) r.emplace_back();
    else r.back() += ch;
  }
  return r;
}

bool contains(const Labels& ls, Label l) { return std::find(ls.begin(), ls.end(), l) != ls.end(); }

struct Operand {
  Array x;
  Labels labels;
};

struct Plan {
  std::vector<Operand> operands;
  Labels output;
  std::map<Label, int64_t> sizes;
};

Plan parse(const std::string& spec_in, const std::vector<Array>& xs) {
  std::string spec;
  for (char ch : spec_in)
    if (!std::isspace(static_cast<unsigned char>(ch))) spec += ch;
  const size_t arrow = spec.find("->");
  if (arrow != std::string::npos && spec.find("->", arrow + 2) != std::string::npos)
    throw ValueError("einsum: subscripts '" + spec_in + "' contain more than one '->'");
  const auto inputs = split(spec.substr(0, arrow), ',');
  if (inputs.size() != xs.size())
    throw ValueError("einsum: subscripts '" + spec_in + "' name " + std::to_string(inputs.size()) +
                     " operand(s) but " + std::to_string(xs.size()) + " were given");
  std::vector<Term> terms;
  int64_t max_ell = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    terms.push_back(parse_term(spec_in, inputs[i]));
    const Term& t = terms.back();
    const int64_t named = int64_t(t.before.size() + t.after.size()), nd = xs[i].ndim();
    if (t.ellipsis ? named > nd : named != nd)
      throw ShapeError("einsum: operand " + std::to_string(i) + " has shape " + shape_to_string(xs[i].shape()) +
                       " (rank " + std::to_string(nd) + ") but its subscripts '" + t.text + "' name " +
                       std::to_string(named) + " axes");
    if (t.ellipsis) max_ell = std::max(max_ell, nd - named);
  }
  Plan plan;
  std::map<Label, int> count;
  for (size_t i = 0; i < terms.size(); ++i) {
    const Term& t = terms[i];
    Labels ls = t.before;
    const int64_t ell = xs[i].ndim() - int64_t(t.before.size() + t.after.size());
    for (int64_t j = 0; j < ell; ++j) ls.push_back(kEllipsis + Label(max_ell - ell + j));
    ls.insert(ls.end(), t.after.begin(), t.after.end());
    for (size_t k = 0; k < ls.size(); ++k) {
      const int64_t d = xs[i].shape()[k];
      auto [it, fresh] = plan.sizes.emplace(ls[k], d);
      if (!fresh && it->second != d) {
        // Sizes of one index must agree, or be 1 and broadcast (as jnp.einsum allows).
        if (d == 1 || it->second == 1) it->second = d == 1 ? it->second : d;
        else
          throw ShapeError("einsum: index " + label_name(ls[k]) + " of '" + spec_in + "' has size " +
                           std::to_string(it->second) + " in one place and size " + std::to_string(d) +
                           " in operand " + std::to_string(i) + " (shape " + shape_to_string(xs[i].shape()) +
                           "); sizes of one index must match or be 1");
      }
      ++count[ls[k]];
    }
    plan.operands.push_back({xs[i], ls});
  }
  if (arrow == std::string::npos) {  // implicit: ellipsis dims, then indices used once, sorted
    for (int64_t j = 0; j < max_ell; ++j) plan.output.push_back(kEllipsis + Label(j));
    for (auto [l, n] : count)
      if (l < kEllipsis && n == 1) plan.output.push_back(l);
  } else {
    const Term out = parse_term(spec_in, spec.substr(arrow + 2));
    plan.output = out.before;
    if (out.ellipsis)
      for (int64_t j = 0; j < max_ell; ++j) plan.output.push_back(kEllipsis + Label(j));
    plan.output.insert(plan.output.end(), out.after.begin(), out.after.end());
    for (size_t k = 0; k < plan.output.size(); ++k) {
      const Label l = plan.output[k];
      if (!count.count(l))
        throw ValueError("einsum: output index " + label_name(l) + " of '" + spec_in +
                         "' does not appear in any input");
      if (std::find(plan.output.begin(), plan.output.begin() + long(k), l) != plan.output.begin() + long(k))
        throw ValueError("einsum: output index " + label_name(l) + " is repeated in '" + spec_in + "'");
    }
  }
  return plan;
}

// Sums out the dims whose labels are not in `keep`, keeping `dtype`.
void sum_out(Operand& op, const Labels& keep, DType dtype) {
  Axes axes;
  Labels rest;
  for (size_t i = 0; i < op.labels.size(); ++i) {
    if (contains(keep, op.labels[i])) rest.push_back(op.labels[i]);
    else axes.push_back(int64_t(i));
  }
  if (axes.empty()) return;
  op.x = convert(sum(op.x, axes), dtype);
  op.labels = rest;
}

// Takes diagonals of indices repeated within the operand, and drops size-1 dims that
// broadcast against a larger size elsewhere (the values are the same along them).
void normalize(Operand& op, const std::map<Label, int64_t>& sizes) {
  for (bool again = true; again;) {
    again = false;
    for (size_t a = 0; a < op.labels.size() && !again; ++a)
      for (size_t b = a + 1; b < op.labels.size() && !again; ++b) {
        if (op.labels[a] != op.labels[b]) continue;
        const Label l = op.labels[a];
        op.x = diagonal_front(op.x, int64_t(a), int64_t(b));
        op.labels.erase(op.labels.begin() + long(b));
        op.labels.erase(op.labels.begin() + long(a));
        op.labels.insert(op.labels.begin(), l);
        again = true;
      }
  }
  Shape shape;
  Labels labels;
  for (size_t i = 0; i < op.labels.size(); ++i) {
    if (op.x.shape()[i] == 1 && sizes.at(op.labels[i]) != 1) continue;
    shape.push_back(op.x.shape()[i]);
    labels.push_back(op.labels[i]);
  }
  if (labels.size() != op.labels.size()) op.x = reshape(op.x, shape), op.labels = labels;
}

Operand contract(const Operand& l, const Operand& r, const Labels& later) {
  DotDims dims;
  Labels batch, lfree, rfree;
  for (size_t i = 0; i < l.labels.size(); ++i) {
    const Label lab = l.labels[i];
    auto it = std::find(r.labels.begin(), r.labels.end(), lab);
    if (it == r.labels.end()) {
      lfree.push_back(lab);
      continue;
    }
    const int64_t j = it - r.labels.begin();
    if (contains(later, lab)) {
      dims.lhs_batch.push_back(int64_t(i)), dims.rhs_batch.push_back(j);
      batch.push_back(lab);
    } else {
      dims.lhs_contracting.push_back(int64_t(i)), dims.rhs_contracting.push_back(j);
    }
  }
  for (Label lab : r.labels)
    if (!contains(l.labels, lab)) rfree.push_back(lab);
  Labels out = batch;
  out.insert(out.end(), lfree.begin(), lfree.end());
  out.insert(out.end(), rfree.begin(), rfree.end());
  return {dot_general(l.x, r.x, dims), out};
}

}  // namespace
}  // namespace tessel::ops

namespace tessel {

Array einsum(const std::string& spec, const std::vector<Array>& operands) {
  using namespace ops;
  if (operands.empty()) throw ValueError("einsum: no operands given for subscripts '" + spec + "'");
  Plan plan = parse(spec, operands);
  const PromotedType t = result_type(operands);
  for (auto& op : plan.operands) {
    op.x = convert(op.x, t.dtype, t.weak);
    normalize(op, plan.sizes);
  }
  auto& ops = plan.operands;
  Operand cur = ops[0];
  for (size_t i = 1; i <= ops.size(); ++i) {
    // Labels still needed after this step: the output's and those of later operands.
    Labels later = plan.output;
    for (size_t j = i + 1; j < ops.size(); ++j) later.insert(later.end(), ops[j].labels.begin(), ops[j].labels.end());
    if (i == ops.size()) {
      sum_out(cur, later, t.dtype);
      break;
    }
    Operand next = ops[i];
    Labels keep_cur = later, keep_next = later;
    keep_cur.insert(keep_cur.end(), next.labels.begin(), next.labels.end());
    keep_next.insert(keep_next.end(), cur.labels.begin(), cur.labels.end());
    sum_out(cur, keep_cur, t.dtype);
    sum_out(next, keep_next, t.dtype);
    cur = contract(cur, next, later);
  }
  Axes perm;
  for (Label l : plan.output)
    perm.push_back(std::find(cur.labels.begin(), cur.labels.end(), l) - cur.labels.begin());
  return transpose(cur.x, perm);
}

}  // namespace tessel
