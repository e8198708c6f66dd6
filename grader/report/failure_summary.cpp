/// @file failure_summary.cpp
#include "report/failure_summary.h"

#include <map>

namespace workbook {

std::string failure_key(const CaseResult& c) {
    const std::string& m = c.message.empty() ? c.detail : c.message;
    if (c.cause != "launch" && c.cause != "stream") return m;
    std::string key;
    for (size_t i = 0; i < m.size(); ++i) {
        const bool digit = m[i] >= '0' && m[i] <= '9';
        if (!digit) key += m[i];
        else if (key.empty() || key.back() != '#') key += '#';
    }
    return key;
}

std::vector<FailureGroup> group_failures(const std::vector<CaseResult>& cases) {
    std::vector<FailureGroup> groups;
    std::map<std::string, size_t> index;
    for (const CaseResult& c : cases) {
        if (c.passed || c.skipped) continue;
        const std::string key = failure_key(c);
        auto it = index.find(key);
        if (it == index.end()) {
            index.emplace(key, groups.size());
            groups.push_back(FailureGroup{c.message.empty() ? c.detail : c.message, {c.name}});
        } else {
            groups[it->second].cases.push_back(c.name);
        }
    }
    return groups;
}

std::string repeated_failure_line(const FailureGroup& g) {
    if (g.cases.size() < 2) return "";
    const size_t more = g.cases.size() - 1;
    std::string line = "and " + std::to_string(more) + (more == 1 ? " more case" : " more cases") +
                       " with the same failure as " + g.cases.front() + ": ";
    const size_t shown = std::min<size_t>(more, 4);
    for (size_t i = 1; i <= shown; ++i) line += (i > 1 ? ", " : "") + g.cases[i];
    if (more > shown) line += ", ...";
    return line + " (the JSON report lists every case)";
}

std::string stub_notice(const std::vector<CaseResult>& cases, bool untouched) {
    size_t failed = 0, passed = 0, not_implemented = 0;
    for (const CaseResult& c : cases) {
        if (c.skipped) continue;
        if (c.passed) {
            ++passed;
            continue;
        }
        ++failed;
        const std::string& m = c.message.empty() ? c.detail : c.message;
        if (m.find("returned cudaErrorNotYetImplemented") != std::string::npos) ++not_implemented;
    }
    if (failed == 0) return "";
    if (untouched)
        return "still the stub: this file is the stub as it was handed out, unchanged. Write the kernel (an "
               "exercise's TODO comments say where), then grade again.";
    if (passed == 0 && not_implemented == failed)
        return "still the stub: every case failed because the entry point returns cudaErrorNotYetImplemented, as "
               "the bare stub does. Write the kernel, then grade again.";
    return "";
}

}  // namespace workbook
