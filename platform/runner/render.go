package runner

import (
	"fmt"
	"image"
	"image/color"
	"image/color/palette"
	"image/draw"
	"image/gif"
	"image/png"
	"os"
	"path/filepath"
	"strings"
)

// recorder collects the frames of a rendered rollout and writes them as an
// animated GIF (a path ending in .gif) or as numbered PNG files in a
// folder (any other path).
type recorder struct {
	path   string
	asGIF  bool
	max    int
	frames []*image.Paletted
	pngs   int
	// colours maps each colour met so far to its palette index: the
	// built-in renderings use few flat colours, so an exact palette keeps
	// them crisp and needs no dithering.
	colours map[color.RGBA]uint8
	pal     color.Palette
}

// newRecorder prepares to record at most max frames into path.
func newRecorder(path string, max int) (*recorder, error) {
	r := &recorder{path: path, asGIF: strings.EqualFold(filepath.Ext(path), ".gif"), max: max, colours: map[color.RGBA]uint8{}}
	if !r.asGIF {
		if err := os.MkdirAll(path, 0o755); err != nil {
			return nil, fmt.Errorf("--render: %w", err)
		}
	}
	return r, nil
}

// full reports whether the frame cap is reached.
func (r *recorder) full() bool { return len(r.frames)+r.pngs >= r.max }

// add records one frame.
func (r *recorder) add(img image.Image) error {
	if r.full() {
		return nil
	}
	if !r.asGIF {
		f, err := os.Create(filepath.Join(r.path, fmt.Sprintf("frame_%05d.png", r.pngs)))
		if err != nil {
			return fmt.Errorf("--render: %w", err)
		}
		err = png.Encode(f, img)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("--render: %w", err)
		}
		r.pngs++
		return nil
	}
	r.frames = append(r.frames, r.paletted(img))
	return nil
}

// paletted converts img with the exact palette of the colours met so far,
// growing it; past 256 colours it falls back to a fixed web palette.
func (r *recorder) paletted(img image.Image) *image.Paletted {
	b := img.Bounds()
	idx := make([]uint8, b.Dx()*b.Dy())
	i := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			k, ok := r.colours[c]
			if !ok {
				if len(r.pal) == 256 {
					p := image.NewPaletted(b, palette.WebSafe)
					draw.Draw(p, b, img, b.Min, draw.Src)
					return p
				}
				k = uint8(len(r.pal))
				r.colours[c] = k
				r.pal = append(r.pal, c)
			}
			idx[i] = k
			i++
		}
	}
	// Frames share the growing palette: each gets the palette as it is now,
	// which covers every index it uses.
	p := image.NewPaletted(b, append(color.Palette(nil), r.pal...))
	for y := 0; y < b.Dy(); y++ {
		copy(p.Pix[y*p.Stride:y*p.Stride+b.Dx()], idx[y*b.Dx():(y+1)*b.Dx()])
	}
	return p
}

// close writes the GIF (PNG frames are already written) and describes what
// was written.
func (r *recorder) close() (string, error) {
	if !r.asGIF {
		return fmt.Sprintf("%d PNG frames in %s", r.pngs, r.path), nil
	}
	if len(r.frames) == 0 {
		return "", fmt.Errorf("--render: no frames to write")
	}
	delays := make([]int, len(r.frames))
	for i := range delays {
		delays[i] = 4 // hundredths of a second: 25 frames/s
	}
	f, err := os.Create(r.path)
	if err != nil {
		return "", fmt.Errorf("--render: %w", err)
	}
	err = gif.EncodeAll(f, &gif.GIF{Image: r.frames, Delay: delays})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("--render: writing %s: %w", r.path, err)
	}
	return fmt.Sprintf("an animated GIF of %d frames: %s", len(r.frames), r.path), nil
}
