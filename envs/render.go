package envs

import (
	"image"
	"image/color"
	"image/draw"
	"math"
)

// Colours of the built-in renderings (Gymnasium's palette).
var (
	black       = color.RGBA{0, 0, 0, 255}
	poleBrown   = color.RGBA{202, 152, 101, 255}
	axleBlue    = color.RGBA{129, 132, 203, 255}
	rodRed      = color.RGBA{204, 77, 77, 255}
	wheelGrey   = color.RGBA{128, 128, 128, 255}
	flagYellow  = color.RGBA{204, 204, 0, 255}
	linkCyan    = color.RGBA{0, 204, 204, 255}
	jointYellow = color.RGBA{204, 204, 0, 255}
)

// canvas is a white RGBA image with the few filled shapes the renderings
// need. Shapes are filled by testing each pixel centre in their bounding
// box, which is plenty fast for one frame and needs no dependency.
type canvas struct {
	img *image.RGBA
}

func newCanvas(w, h int) canvas {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	return canvas{img: img}
}

// fill sets every pixel in the box [x0,x1]×[y0,y1] whose centre satisfies in.
func (c canvas) fill(x0, y0, x1, y1 float64, col color.RGBA, in func(x, y float64) bool) {
	b := c.img.Bounds()
	ix0, iy0 := max(int(math.Floor(x0)), b.Min.X), max(int(math.Floor(y0)), b.Min.Y)
	ix1, iy1 := min(int(math.Ceil(x1)), b.Max.X-1), min(int(math.Ceil(y1)), b.Max.Y-1)
	for y := iy0; y <= iy1; y++ {
		for x := ix0; x <= ix1; x++ {
			if in(float64(x)+0.5, float64(y)+0.5) {
				c.img.SetRGBA(x, y, col)
			}
		}
	}
}

// rect fills the axis-aligned rectangle with corners (x0,y0) and (x1,y1).
func (c canvas) rect(x0, y0, x1, y1 float64, col color.RGBA) {
	c.fill(x0, y0, x1, y1, col, func(x, y float64) bool { return x >= x0 && x <= x1 && y >= y0 && y <= y1 })
}

// disc fills a circle of radius r around (cx, cy).
func (c canvas) disc(cx, cy, r float64, col color.RGBA) {
	c.fill(cx-r, cy-r, cx+r, cy+r, col, func(x, y float64) bool {
		return (x-cx)*(x-cx)+(y-cy)*(y-cy) <= r*r
	})
}

// line fills a segment from (x0,y0) to (x1,y1) of the given width (at least
// one pixel wide, so thin lines stay visible).
func (c canvas) line(x0, y0, x1, y1, width float64, col color.RGBA) {
	half := math.Max(width, 1) / 2
	dx, dy := x1-x0, y1-y0
	l2 := dx*dx + dy*dy
	c.fill(math.Min(x0, x1)-half, math.Min(y0, y1)-half, math.Max(x0, x1)+half, math.Max(y0, y1)+half, col,
		func(x, y float64) bool {
			// Distance from the pixel centre to the segment.
			t := 0.0
			if l2 > 0 {
				t = math.Max(0, math.Min(1, ((x-x0)*dx+(y-y0)*dy)/l2))
			}
			px, py := x0+t*dx-x, y0+t*dy-y
			return px*px+py*py <= half*half
		})
}

// triangle fills the triangle with the given corners.
func (c canvas) triangle(ax, ay, bx, by, cx, cy float64, col color.RGBA) {
	side := func(px, py, qx, qy, x, y float64) float64 { return (qx-px)*(y-py) - (qy-py)*(x-px) }
	c.fill(min(ax, bx, cx), min(ay, by, cy), max(ax, bx, cx), max(ay, by, cy), col, func(x, y float64) bool {
		d1, d2, d3 := side(ax, ay, bx, by, x, y), side(bx, by, cx, cy, x, y), side(cx, cy, ax, ay, x, y)
		neg := d1 < 0 || d2 < 0 || d3 < 0
		pos := d1 > 0 || d2 > 0 || d3 > 0
		return !(neg && pos)
	})
}
