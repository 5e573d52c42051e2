"""Checks the shallow-water demo's NetCDF output with xarray (tests/examples/shallow_water_netcdf_test.cpp):
CF attributes, the frame count, and the last frame of h equal, bit for bit, to the demo's .npy.
Usage: netcdf_check.py FILE.nc FILE.npy FRAMES; prints `netcdf_check: ok` and exits 0 when all hold.
"""
import sys

import numpy as np
import xarray as xr

nc, npy, frames = sys.argv[1], sys.argv[2], int(sys.argv[3])
ds = xr.open_dataset(nc)
errors = []
if ds.attrs.get("Conventions") != "CF-1.8":
    errors.append(f"Conventions is {ds.attrs.get('Conventions')!r}")
for name in ("x", "y", "xu", "yv"):
    if ds[name].attrs.get("units") != "m":
        errors.append(f"{name} has units {ds[name].attrs.get('units')!r}")
if not np.issubdtype(ds.time.dtype, np.datetime64):  # xarray decoded 'days since ...'
    errors.append(f"time was not decoded as dates ({ds.time.dtype})")
for name, units in (("h", "m"), ("u", "m s-1"), ("v", "m s-1")):
    if ds[name].attrs.get("units") != units or "standard_name" not in ds[name].attrs:
        errors.append(f"{name} lacks units {units!r} or a standard_name")
if ds.sizes["time"] != frames:
    errors.append(f"{ds.sizes['time']} frames, expected {frames}")
want = np.load(npy)
last = ds.h.isel(time=-1).values
if last.dtype != want.dtype or last.shape != want.shape or last.tobytes() != want.tobytes():
    errors.append(f"the last frame of h ({last.dtype}{list(last.shape)}) differs from {npy} "
                  f"({want.dtype}{list(want.shape)}); max |diff| {np.max(np.abs(last - want)) if last.shape == want.shape else 'n/a'}")
if errors:
    sys.exit("netcdf_check: " + "; ".join(errors))
print(f"netcdf_check: ok, {frames} frames")
