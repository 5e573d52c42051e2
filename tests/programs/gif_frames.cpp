// Reads an animated GIF (giflib) and prints "gif: N frames of WxH pixels, delay D cs, loops";
// with `--png K OUT`, also writes frame K as a PNG (for looking at the demo's animation).
// The demo's CLI test runs it on the animation the demo wrote.
#include <gif_lib.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "png.h"

int main(int argc, char** argv) {
  if (argc != 2 && argc != 5) {
    std::fprintf(stderr, "usage: gif_frames FILE.gif [--png K OUT.png]\n");
    return 2;
  }
  int err = 0;
  GifFileType* gif = DGifOpenFileName(argv[1], &err);
  if (!gif || DGifSlurp(gif) == GIF_ERROR) {
    std::fprintf(stderr, "gif_frames: cannot read %s: %s\n", argv[1], GifErrorString(gif ? gif->Error : err));
    return 1;
  }
  bool loops = false;
  int delay = -1;
  for (int i = 0; i < gif->ImageCount; ++i) {
    const SavedImage& im = gif->SavedImages[i];
    for (int e = 0; e < im.ExtensionBlockCount; ++e) {
      const ExtensionBlock& b = im.ExtensionBlocks[e];
      if (b.Function == APPLICATION_EXT_FUNC_CODE && b.ByteCount == 11 && !std::memcmp(b.Bytes, "NETSCAPE2.0", 11)) loops = true;
      GraphicsControlBlock gcb;
      if (b.Function == GRAPHICS_EXT_FUNC_CODE && DGifExtensionToGCB(b.ByteCount, b.Bytes, &gcb) == GIF_OK && delay < 0)
        delay = gcb.DelayTime;
    }
  }
  std::printf("gif: %d frames of %dx%d pixels, delay %d cs, %s\n", gif->ImageCount, gif->SWidth, gif->SHeight, delay,
              loops ? "loops" : "plays once");
  if (argc == 5) {
    const int k = std::atoi(argv[3]);
    if (k < 0 || k >= gif->ImageCount) {
      std::fprintf(stderr, "gif_frames: no frame %d\n", k);
      return 1;
    }
    const SavedImage& im = gif->SavedImages[k];
    const ColorMapObject* map = im.ImageDesc.ColorMap ? im.ImageDesc.ColorMap : gif->SColorMap;
    shallow_water::Image out(im.ImageDesc.Width, im.ImageDesc.Height);
    for (int y = 0; y < out.height; ++y)
      for (int x = 0; x < out.width; ++x) {
        const GifColorType c = map->Colors[im.RasterBits[y * out.width + x]];
        out.set(x, y, {c.Red, c.Green, c.Blue});
      }
    shallow_water::write_png(argv[4], out);
  }
  DGifCloseFile(gif, &err);
  return 0;
}
