/* SPDX-License-Identifier: Apache-2.0 */
#include "vendorhelper.h"

__attribute__((visibility("default"))) const char *vendorhelper_version(void)
{
    return "vendorhelper 1.0";
}
