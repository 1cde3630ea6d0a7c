#!/usr/bin/env python3
"""Checks a PNG screenshot of a picture: its size, and that it is not blank.

    png_check.py FILE WIDTH HEIGHT

Decodes the PNG with the standard library (8-bit RGB or RGBA, not interlaced, as Chromium
writes them) and fails unless it is WIDTH x HEIGHT pixels (height within 2), at least 5% of its
pixels are not white, it holds at least 8 distinct colours, and both its top 120 rows (title,
legend, axis) and its lower half hold something. Prints the figures it checked.
"""
import struct
import sys
import zlib


def decode(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG"
    at, idat, header = 8, b"", None
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, f"{path}: unsupported {header}"
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        filt = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = previous[i]
            c = previous[i - channels] if i >= channels else 0
            if filt == 1:
                line[i] = (line[i] + a) & 255
            elif filt == 2:
                line[i] = (line[i] + b) & 255
            elif filt == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif filt == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        previous = line
    return width, height, channels, rows


def main():
    path, want_w, want_h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    width, height, channels, rows = decode(path)
    assert width == want_w and abs(height - want_h) <= 2, \
        f"{path}: {width} x {height} pixels, expected {want_w} x {want_h}"
    colours, inked, top, bottom = set(), 0, 0, 0
    for y, line in enumerate(rows):
        for x in range(0, width * channels, channels):
            rgb = line[x:x + 3]
            if rgb != b"\xff\xff\xff":
                inked += 1
                top += y < 120
                bottom += y >= height // 2
                if len(colours) < 1000:
                    colours.add(bytes(rgb))
    share = inked / (width * height)
    print(f"{path}: {width} x {height} px, {100 * share:.1f}% not white, "
          f"{len(colours)}{'+' if len(colours) >= 1000 else ''} colours")
    assert share >= 0.05, f"{path}: only {100 * share:.1f}% of the pixels are not white"
    assert len(colours) >= 8, f"{path}: only {len(colours)} colours"
    assert top > 0 and bottom > 0, f"{path}: blank at the top ({top}) or in the lower half ({bottom})"


if __name__ == "__main__":
    main()
