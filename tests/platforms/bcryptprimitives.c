/* A stand-in for Windows 10's bcryptprimitives.dll, for the tests' Wine prefix only: Wine 8.0 (Debian 12)
 * lacks the DLL, and Rust's standard library takes its random bytes from ProcessPrng in it. This
 * one fills the buffer through advapi32's RtlGenRandom (SystemFunction036), which Wine has. It is
 * built by tests/platforms/run.sh into the test's WINEPREFIX and is never shipped: a real Windows
 * has the real DLL. */
#include <windows.h>
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);
BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
    while (length > 0) {
        ULONG chunk = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk)) return FALSE;
        data += chunk; length -= chunk;
    }
    return TRUE;
}
