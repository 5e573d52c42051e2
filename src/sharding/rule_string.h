#pragma once
// Shardy-style sharding rules written as text (`"b i, i j -> b j"`), for custom_partitioning:
// parsing, binding to the avals of a call (an ir::ShardingRule), and the layouts the rule
// implies forwards (operands -> results) and backwards (results -> operands).
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/sharding_rule.h"
#include "tessel/sharding.h"

namespace tessel::sharding {

/// A parsed rule: one term per operand (left of ->) and per result (right).
struct RuleString {
  struct Term {
    std::vector<std::string> factors;  // explicit factors, in dimension order after `...`
    bool ellipsis = false;             // starts with `...`
    size_t pos = 0;                    // offset of the term in the text
  };
  std::string text;
  std::vector<Term> operands, results;
};

/// Parses `text`; throws ValueError naming `where`, the text and the offending position for
/// a malformed rule (missing ->, bad characters, a factor repeated in one term, `...` not
/// leading, compound factors).
RuleString parse_rule_string(const std::string& text, const std::string& where);

/// The factor rule of `r` for operands `ins` and results `outs`: factors found among the
/// results are pass-through, the others summed reductions. Throws ValueError naming
/// `where` for a wrong number of terms or a term whose dimensions do not match the rank.
ir::ShardingRule bind_rule_string(const RuleString& r, std::span<const Aval> ins, std::span<const Aval> outs,
                                  const std::string& where);

/// Result layouts implied by the known operand layouts (unset when no operand is known).
std::vector<std::optional<Sharding>> infer_with_rule(const ir::ShardingRule& rule, const Mesh& mesh,
                                                     std::span<const std::optional<Sharding>> operands);
/// Operand layouts implied by the known result layouts (reduction dimensions whole; unset
/// when no result is known).
std::vector<std::optional<Sharding>> propagate_with_rule(const ir::ShardingRule& rule, const Mesh& mesh,
                                                         std::span<const std::optional<Sharding>> results);

}  // namespace tessel::sharding
