/* SPDX-License-Identifier: Apache-2.0 */
#ifndef VENDORHELPER_H
#define VENDORHELPER_H

/* The sibling library libvendorprof.so needs through DT_NEEDED (found by RUNPATH $ORIGIN/lib),
 * as vendor profilers ship their own helpers beside the entry library. */
const char *vendorhelper_version(void);

#endif
