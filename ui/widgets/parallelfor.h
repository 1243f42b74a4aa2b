#pragma once
// Work spread over Qt's global thread pool and the calling thread, for the UI's CPU-bound loops (the
// plots' decimation of every curve at each redraw).
//
//   ui::parallelFor(int(items.size()), [&](int i) { results[i] = work(items[i]); });   // returns when all ran

#include <functional>

namespace ui {

/// Calls work(i) once for each i in [0, n), on the calling thread and on as many idle threads of
/// QThreadPool::globalInstance() as help (never waiting for a busy one), and returns when every call
/// has returned. work must be safe to run concurrently for different i.
void parallelFor(int n, const std::function<void(int)> &work);

} // namespace ui
