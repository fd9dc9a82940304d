/*
 * A stand-in for Windows' bcryptprimitives.dll, for running the tests under
 * Wine releases that lack it (Debian 12's Wine 8). Rust's standard library
 * takes its random bytes (HashMap's keys) from `ProcessPrng` there; this
 * serves them from `RtlGenRandom` (SystemFunction036), which Wine has. Built
 * with MinGW by `.ci/run cross` into the Wine prefix only when the prefix
 * has no bcryptprimitives.dll of its own.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG len);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG chunk = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!SystemFunction036(data, chunk)) {
            return FALSE;
        }
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
