/* GNU's strerror_r returns the text; macOS's (POSIX) returns an int (rl_plat_strerror). */
#include <stddef.h>
#include <string.h>

const char *text_of(int error, char *buf, size_t len) {
    return strerror_r(error, buf, len);
}
