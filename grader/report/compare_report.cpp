/// @file compare_report.cpp
#include "report/compare_report.h"

#include <cstdio>
#include <string>

namespace workbook {

std::string describe_failure(const CompareResult& r, const char* tensor_name) {
    char buf[512];
    if (r.total > 0 && r.unwritten == r.total) {
        // The same words for every case, so a kernel that writes nothing reads as one failure.
        std::snprintf(buf, sizeof buf, "no element of %s was written (every one still holds the NaN poison)",
                      tensor_name);
        return buf;
    }
    std::string out;
    if (r.first_unwritten) {
        std::snprintf(buf, sizeof buf, "%s[row %lld, col %lld] was never written (still the NaN poison); expected %.9g",
                      tensor_name, (long long)r.first_row, (long long)r.first_col, r.expected);
    } else if (r.got != r.got) {
        // A NaN is not the poison: the poison's bits are checked, so this one was written.
        std::snprintf(buf, sizeof buf, "%s[row %lld, col %lld]: expected %.9g, got NaN, which the kernel wrote (tolerance %s)",
                      tensor_name, (long long)r.first_row, (long long)r.first_col, r.expected, describe(r.tol).c_str());
    } else {
        std::snprintf(buf, sizeof buf, "%s[row %lld, col %lld]: expected %.9g, got %.9g (tolerance %s)", tensor_name,
                      (long long)r.first_row, (long long)r.first_col, r.expected, r.got, describe(r.tol).c_str());
    }
    out = buf;
    std::snprintf(buf, sizeof buf, "; %llu of the elements are wrong, %llu of them never written",
                  (unsigned long long)r.bad, (unsigned long long)r.unwritten);
    out += buf;
    if (r.nan) {
        std::snprintf(buf, sizeof buf, ", %llu of them NaN written by the kernel", (unsigned long long)r.nan);
        out += buf;
    }
    return out;
}

}  // namespace workbook
