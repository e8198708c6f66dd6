/// @file guard_report.cpp
#include "report/guard_report.h"

#include <cstdio>

namespace workbook {

std::string describe_guard_write(const GuardWrite& g, const char* tensor_name) {
    char buf[640];
    const unsigned long long changed = g.changed;
    const long long index = g.index;
    if (g.before)
        std::snprintf(buf, sizeof buf,
                      "wrote outside %s: %llu guard element(s) before its first element changed, the nearest to it "
                      "at index %lld (%lld before %s[0]): expected %s, got %s",
                      tensor_name, changed, index, -index, tensor_name, g.expected.c_str(), g.got.c_str());
    else
        std::snprintf(buf, sizeof buf,
                      "wrote outside %s: %llu guard element(s) after its last element changed, the first at index "
                      "%lld (%lld past its last element, index %lld): expected %s, got %s",
                      tensor_name, changed, index, index - (static_cast<long long>(g.span) - 1),
                      static_cast<long long>(g.span) - 1, g.expected.c_str(), g.got.c_str());
    return buf;
}

}  // namespace workbook
