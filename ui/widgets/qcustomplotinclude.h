#pragma once
// qcustomplot.h uses the Qt keywords `signals` and `foreach`, which this project switches off
// (QT_NO_KEYWORDS, because they clash with libtorch). Map them for this one header only.

#include <QtGlobal>

#ifndef signals
#define signals Q_SIGNALS
#define TUNEBENCH_QCP_SIGNALS
#endif
#ifndef foreach
#define foreach Q_FOREACH
#define TUNEBENCH_QCP_FOREACH
#endif

#include <qcustomplot.h>

#ifdef TUNEBENCH_QCP_SIGNALS
#undef signals
#undef TUNEBENCH_QCP_SIGNALS
#endif
#ifdef TUNEBENCH_QCP_FOREACH
#undef foreach
#undef TUNEBENCH_QCP_FOREACH
#endif
