#include "sharding/rule_string.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "tessel/error.h"

namespace tessel::sharding {
namespace {

[[noreturn]] void malformed(const std::string& where, const std::string& text, size_t pos, const std::string& why) {
  throw ValueError(where + ": malformed sharding rule '" + text + "' at position " + std::to_string(pos) + ": " + why +
                   "\n  " + text + "\n  " + std::string(pos, ' ') +
                   "^\nWrite one term per argument and result, e.g. \"b i, i j -> b j\"");
}

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// Parses the comma-separated terms of text[begin, end).
std::vector<RuleString::Term> parse_terms(const std::string& text, size_t begin, size_t end, const std::string& where) {
  std::vector<RuleString::Term> terms(1);
  terms.back().pos = begin;
  size_t i = begin;
  while (i < end) {
    char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == ',') {
      terms.emplace_back();
      terms.back().pos = ++i;
    } else if (text.compare(i, 3, "...") == 0) {
      auto& t = terms.back();
      if (t.ellipsis || !t.factors.empty()) malformed(where, text, i, "'...' may only start a term");
      t.ellipsis = true;
      i += 3;
    } else if (is_name_start(c)) {
      size_t j = i;
      while (j < end && is_name_char(text[j])) ++j;
      std::string name = text.substr(i, j - i);
      auto& f = terms.back().factors;
      if (std::find(f.begin(), f.end(), name) != f.end())
        malformed(where, text, i, "factor '" + name + "' names two dimensions of one term");
      f.push_back(name);
      i = j;
    } else if (c == '(') {
      malformed(where, text, i, "compound factors '(i j)' are not supported; name one factor per dimension");
    } else if (c == '-' || c == '>') {
      malformed(where, text, i, "a rule has exactly one '->'");
    } else {
      malformed(where, text, i, std::string("unexpected character '") + c + "'; factors are names like i, batch, k2");
    }
  }
  return terms;
}

}  // namespace

RuleString parse_rule_string(const std::string& text, const std::string& where) {
  RuleString r;
  r.text = text;
  size_t arrow = text.find("->");
  if (arrow == std::string::npos) malformed(where, text, text.size(), "expected '->' between arguments and results");
  r.operands = parse_terms(text, 0, arrow, where);
  r.results = parse_terms(text, arrow + 2, text.size(), where);
  return r;
}

ir::ShardingRule bind_rule_string(const RuleString& r, std::span<const Aval> ins, std::span<const Aval> outs,
                                  const std::string& where) {
  auto count_error = [&](const char* what, size_t terms, size_t values) {
    throw ValueError(where + ": sharding rule '" + r.text + "' has " + std::to_string(terms) + " " + what +
                     " term(s) but the function has " + std::to_string(values) + " " + what +
                     "(s) (Array leaves); write one term per " + what);
  };
  // An empty rule side means no values (a function of no arguments): "" parses as one
  // empty term, which stands for a rank-0 value only when there is one.
  auto terms_of = [](const std::vector<RuleString::Term>& ts, size_t n) {
    if (n == 0 && ts.size() == 1 && ts[0].factors.empty() && !ts[0].ellipsis) return std::vector<RuleString::Term>{};
    return ts;
  };
  std::vector<RuleString::Term> ot = terms_of(r.operands, ins.size()), rt = terms_of(r.results, outs.size());
  if (ot.size() != ins.size()) count_error("argument", ot.size(), ins.size());
  if (rt.size() != outs.size()) count_error("result", rt.size(), outs.size());

  // How many dimensions `...` covers: the same in every term that has it.
  std::optional<size_t> ellipsis_dims;
  auto check_term = [&](const RuleString::Term& t, const Aval& a, const char* what, size_t k) {
    size_t rank = a.shape.size();
    auto bad = [&](const std::string& why) {
      throw ValueError(where + ": sharding rule '" + r.text + "': the term at position " + std::to_string(t.pos) +
                       " for " + what + " " + std::to_string(k) + " (" + a.to_string() + ", rank " +
                       std::to_string(rank) + ") " + why);
    };
    if (!t.ellipsis) {
      if (t.factors.size() != rank) bad("names " + std::to_string(t.factors.size()) + " dimension(s)");
      return;
    }
    if (t.factors.size() > rank) bad("names " + std::to_string(t.factors.size()) + " dimension(s) after '...'");
    size_t n = rank - t.factors.size();
    if (ellipsis_dims && *ellipsis_dims != n)
      bad("leaves " + std::to_string(n) + " dimension(s) to '...', another term " + std::to_string(*ellipsis_dims));
    ellipsis_dims = n;
  };
  for (size_t i = 0; i < ins.size(); ++i) check_term(ot[i], ins[i], "argument", i);
  for (size_t i = 0; i < outs.size(); ++i) check_term(rt[i], outs[i], "result", i);

  ir::ShardingRule rule;
  std::map<std::string, int> ids;
  std::set<int> in_results;
  auto id_of = [&](const std::string& name) {
    auto [it, added] = ids.emplace(name, int(rule.factors.size()));
    if (added) rule.factors.push_back(ir::Combine::kNone);
    return it->second;
  };
  auto dims_of = [&](const RuleString::Term& t) {
    std::vector<int> dims;
    if (t.ellipsis)  // `...` dimensions align from the left; "." cannot start a user's name
      for (size_t d = 0; d < *ellipsis_dims; ++d) dims.push_back(id_of("..." + std::to_string(d)));
    for (auto& f : t.factors) dims.push_back(id_of(f));
    return dims;
  };
  for (auto& t : ot) rule.operands.push_back(dims_of(t));
  for (auto& t : rt) {
    rule.results.push_back(dims_of(t));
    in_results.insert(rule.results.back().begin(), rule.results.back().end());
  }
  for (size_t f = 0; f < rule.factors.size(); ++f)
    if (!in_results.count(int(f))) rule.factors[f] = ir::Combine::kSum;
  return rule;
}

namespace {

/// The mesh axes of each factor, read from the dimensions of the known values. The first
/// value splitting a factor decides it; an axis already taken by another factor is not
/// reused (one mesh axis splits one dimension of a value).
std::vector<std::vector<std::string>> factor_axes(size_t num_factors, const std::vector<std::vector<int>>& labels,
                                                  std::span<const std::optional<Sharding>> known) {
  std::vector<std::vector<std::string>> axes(num_factors);
  std::set<std::string> used;
  for (size_t i = 0; i < known.size() && i < labels.size(); ++i) {
    if (!known[i] || !known[i]->valid() || known[i]->is_single_device()) continue;
    const PartitionSpec& spec = known[i]->spec();
    for (size_t d = 0; d < labels[i].size(); ++d) {
      int f = labels[i][d];
      const auto& a = spec[d].axes();
      if (f < 0 || a.empty() || !axes[size_t(f)].empty()) continue;
      if (std::any_of(a.begin(), a.end(), [&](const std::string& x) { return used.count(x) > 0; })) continue;
      axes[size_t(f)] = a;
      used.insert(a.begin(), a.end());
    }
  }
  return axes;
}

Sharding layout(const Mesh& mesh, const std::vector<int>& dims, const std::vector<std::vector<std::string>>& axes,
                const std::vector<ir::Combine>& kinds) {
  std::vector<SpecEntry> entries;
  for (int f : dims)
    entries.emplace_back(f >= 0 && kinds[size_t(f)] == ir::Combine::kNone ? axes[size_t(f)]
                                                                          : std::vector<std::string>{});
  return NamedSharding(mesh, PartitionSpec(std::move(entries)));
}

bool any_known(std::span<const std::optional<Sharding>> v) {
  return std::any_of(v.begin(), v.end(), [](const auto& s) { return s && s->valid(); });
}

}  // namespace

std::vector<std::optional<Sharding>> infer_with_rule(const ir::ShardingRule& rule, const Mesh& mesh,
                                                     std::span<const std::optional<Sharding>> operands) {
  std::vector<std::optional<Sharding>> r(rule.results.size());
  if (!any_known(operands)) return r;
  auto axes = factor_axes(rule.factors.size(), rule.operands, operands);
  for (size_t i = 0; i < r.size(); ++i) r[i] = layout(mesh, rule.results[i], axes, rule.factors);
  return r;
}

std::vector<std::optional<Sharding>> propagate_with_rule(const ir::ShardingRule& rule, const Mesh& mesh,
                                                         std::span<const std::optional<Sharding>> results) {
  std::vector<std::optional<Sharding>> r(rule.operands.size());
  if (!any_known(results)) return r;
  auto axes = factor_axes(rule.factors.size(), rule.results, results);
  for (size_t i = 0; i < r.size(); ++i) r[i] = layout(mesh, rule.operands[i], axes, rule.factors);
  return r;
}

}  // namespace tessel::sharding
