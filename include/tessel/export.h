#pragma once
// Symbol visibility: the library is built with hidden visibility; what the public
// headers declare is exported with TESSEL_API.
#if defined(TESSEL_SHARED_BUILD)
#define TESSEL_API __attribute__((visibility("default")))
#else
#define TESSEL_API
#endif
