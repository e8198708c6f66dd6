/// @file compare_report.cpp
#include "report/compare_report.h"

#include <cstdio>

namespace workbook {

std::string describe_failure(const CompareResult& r, const char* tensor_name) {
    char buf[512];
    if (r.total > 0 && r.unwritten == r.total) {
        // The same words for every case, so a kernel that writes nothing reads as one failure.
        std::snprintf(buf, sizeof buf, "no element of %s was written (every one still holds the NaN poison)",
                      tensor_name);
    } else if (r.first_unwritten) {
        std::snprintf(buf, sizeof buf,
                      "%s[row %lld, col %lld] was never written (still the NaN poison); expected %.9g"
                      "; %llu of the elements are wrong, %llu of them never written",
                      tensor_name, (long long)r.first_row, (long long)r.first_col, r.expected,
                      (unsigned long long)r.bad, (unsigned long long)r.unwritten);
    } else {
        std::snprintf(buf, sizeof buf,
                      "%s[row %lld, col %lld]: expected %.9g, got %.9g (tolerance %s)"
                      "; %llu of the elements are wrong, %llu of them never written",
                      tensor_name, (long long)r.first_row, (long long)r.first_col, r.expected, r.got,
                      describe(r.tol).c_str(), (unsigned long long)r.bad, (unsigned long long)r.unwritten);
    }
    return buf;
}

}  // namespace workbook
