package envs

import (
	"fmt"
	"image"
	"math"
)

// PixelPong-v0 frame geometry: the Atari 2600 screen (210 rows of 160
// pixels, RGB) with Atari Pong's layout. Rows [pongFieldTop,
// pongFieldBottom) are the playing field between the two white walls.
const (
	PongHeight   = 210 // frame rows
	PongWidth    = 160 // frame columns
	PongChannels = 3   // RGB

	pongFrameSize = PongHeight * PongWidth * PongChannels

	pongTopWallTop  = 24
	pongFieldTop    = 34  // first row of the playing field
	pongFieldBottom = 194 // first row of the bottom wall
	pongPaddleH     = 16
	pongPaddleW     = 4
	pongOppX        = 16  // opponent paddle's first column (left)
	pongAgentX      = 140 // agent paddle's first column (right)
	pongBallW       = 2
	pongBallH       = 4

	pongWinScore    = 21
	pongBallVX      = 2.0 // horizontal ball speed, pixels per frame
	pongMaxBallVY   = 3.0 // vertical ball speed off a paddle's edge
	pongAgentSpeed  = 2.0 // agent paddle speed, pixels per frame
	pongServeFrames = 32  // pause before each serve
	pongOppReaction = 6   // frames before the opponent reacts to a return
	pongOppAimNoise = 5.0 // the opponent aims within ± this many pixels
)

// Atari Pong's six actions, in the ALE's order for Pong's minimal action set.
const (
	PongNoop = iota
	PongFire
	PongRight // moves the paddle up
	PongLeft  // moves the paddle down
	PongRightFire
	PongLeftFire
	pongNumActions
)

// PongActionMeanings names the actions as the ALE does.
var PongActionMeanings = [pongNumActions]string{"NOOP", "FIRE", "RIGHT", "LEFT", "RIGHTFIRE", "LEFTFIRE"}

// Colours of the frame (Atari Pong's palette).
var (
	pongBackground = [3]uint8{144, 72, 17}
	pongWhite      = [3]uint8{236, 236, 236}
	pongOrange     = [3]uint8{213, 130, 74} // opponent
	pongGreen      = [3]uint8{92, 186, 92}  // agent
)

// PongState is PixelPong's game state in frame pixels: positions are the
// top-left corner of each object, y growing downwards.
type PongState struct {
	BallX, BallY   float64
	BallVX, BallVY float64
	// BallVisible is false while the game pauses before a serve.
	BallVisible bool
	AgentY      float64 // agent (right, green) paddle's top row
	OppY        float64 // opponent (left, orange) paddle's top row
	AgentScore  int
	OppScore    int
}

// PixelPong is a two-player Pong rendered in the Atari 2600's frame format,
// written from scratch in Go: no emulator, no ROM. The agent controls the
// right (green) paddle against a scripted left (orange) opponent; the first
// to 21 points ends the episode. Observations are 210×160×3 RGB frames
// (uint8 values carried as float64); actions are Atari Pong's six (see
// PongActionMeanings); each step repeats the action for frameskip frames
// (4 by default) and returns the sum of their rewards (+1 for a point won,
// −1 for a point lost) and the last frame. With repeat_action_probability
// p, each frame keeps the previous frame's action with probability p (the
// ALE's sticky actions). The game is deterministic for a seed.
//
// The opponent tracks the ball at a limited speed, starting a few frames
// after each return and aiming its paddle with a small random offset; it
// never misses on purpose, but a ball that leaves the agent's paddle near
// an edge travels too steeply for it to catch. See envs/README.md for how
// this differs from Atari Pong.
type PixelPong struct {
	episode
	st PongState

	frameSkip int
	sticky    float64
	oppSpeed  float64
	prevMove  int // last frame's movement action (sticky actions)

	serveWait int     // frames left before the next serve
	serveDir  float64 // horizontal direction of the next serve
	oppWait   int     // frames before the opponent reacts
	oppAim    float64 // opponent's aiming offset for this rally

	template []uint8 // background and walls, copied into each frame
	frame    []uint8 // the last rendered frame
	obsSpace Box
}

// pixelPongSpec is PixelPong-v0's registration: the ALE's 108,000-frame
// limit at the default frame skip of 4.
var pixelPongSpec = Spec{Name: "PixelPong-v0", MaxEpisodeSteps: 27000}

func init() {
	Register(pixelPongSpec.Name, func(cfg Config) (Env, error) { return NewPixelPong(cfg) })
}

// NewPixelPong returns a PixelPong-v0 with the given options: frameskip
// (frames per step, default 4), repeat_action_probability (sticky actions,
// default 0; the ALE's v5 setting is 0.25), opponent_speed (pixels per
// frame, default 1.25; the ball moves 2 across and up to 3 vertically) and
// max_episode_steps (default 27,000 steps).
func NewPixelPong(cfg Config) (*PixelPong, error) {
	spec := pixelPongSpec
	c := newConfigReader(spec.Name, cfg)
	maxSteps := c.maxSteps(spec)
	skip := c.int("frameskip", 4)
	sticky := c.float("repeat_action_probability", 0)
	opp := c.float("opponent_speed", 1.25)
	if err := c.done(); err != nil {
		return nil, err
	}
	switch {
	case skip < 1:
		return nil, fmt.Errorf("envs: %s: config key \"frameskip\" must be at least 1, got %d", spec.Name, skip)
	case sticky < 0 || sticky >= 1:
		return nil, fmt.Errorf("envs: %s: config key \"repeat_action_probability\" must be in [0, 1), got %v", spec.Name, sticky)
	case opp <= 0 || opp > 8:
		return nil, fmt.Errorf("envs: %s: config key \"opponent_speed\" must be in (0, 8] pixels per frame, got %v", spec.Name, opp)
	}
	e := &PixelPong{frameSkip: skip, sticky: sticky, oppSpeed: opp}
	e.init(spec, maxSteps)
	e.obsSpace = NewBox(0, 255, PongHeight, PongWidth, PongChannels)
	e.template = make([]uint8, pongFrameSize)
	e.frame = make([]uint8, pongFrameSize)
	paintTemplate(e.template)
	return e, nil
}

// paintTemplate draws what never moves: the background and the two walls.
func paintTemplate(f []uint8) {
	for p := 0; p < PongHeight*PongWidth; p++ {
		copy(f[3*p:3*p+3], pongBackground[:])
	}
	fillRect(f, 0, pongTopWallTop, PongWidth, pongFieldTop, pongWhite)
	fillRect(f, 0, pongFieldBottom, PongWidth, pongFieldBottom+16, pongWhite)
}

// ObservationSpace implements Env: Box(0, 255, [210, 160, 3]).
func (e *PixelPong) ObservationSpace() Space { return e.obsSpace }

// ActionSpace implements Env: Discrete(6).
func (e *PixelPong) ActionSpace() Space { return Discrete{N: pongNumActions} }

// Reset implements Env.
func (e *PixelPong) Reset(seed int64) ([]float64, error) { return resetAlloc(e, seed), nil }

// Step implements Env.
func (e *PixelPong) Step(action []float64) (Step, error) { return stepAlloc(e, &e.episode, action) }

// Close implements Env.
func (e *PixelPong) Close() error { return nil }

// State returns the game state after the last step.
func (e *PixelPong) State() PongState { return e.st }

// Frame returns the last rendered frame, rows of 160 RGB pixels. It is the
// environment's own buffer: read it before the next Step or Reset.
func (e *PixelPong) Frame() []uint8 { return e.frame }

// Render implements Renderer: the last frame as an image.
func (e *PixelPong) Render() (image.Image, error) {
	img := image.NewRGBA(image.Rect(0, 0, PongWidth, PongHeight))
	for p := 0; p < PongHeight*PongWidth; p++ {
		copy(img.Pix[4*p:4*p+3], e.frame[3*p:3*p+3])
		img.Pix[4*p+3] = 255
	}
	return img, nil
}

func (e *PixelPong) obsSize() int { return pongFrameSize }

func (e *PixelPong) checkAction(action []float64) error {
	_, err := discreteAction(e.spec.Name, action, pongNumActions)
	return err
}

func (e *PixelPong) resetInto(seed int64, obs []float64) {
	e.begin(seed)
	mid := float64(pongFieldTop+pongFieldBottom-pongPaddleH) / 2
	e.st = PongState{AgentY: mid, OppY: mid}
	e.prevMove = PongNoop
	e.serveDir = 1 // the first serve goes to the agent
	e.serveWait = pongServeFrames
	e.oppWait = 0
	e.render()
	if obs != nil {
		writeObs(obs, e.frame)
	}
}

func (e *PixelPong) stepInto(action []float64, obs []float64) (float64, bool, bool) {
	reward, terminated := e.advance(int(action[0]))
	e.render()
	if obs != nil { // nil: frame mode, the vector hands out e.frame
		writeObs(obs, e.frame)
	}
	return reward, terminated, e.finish(terminated)
}

// advance plays action a for frameSkip frames (fewer if the game ends),
// with sticky actions, and returns their summed reward and whether the
// game is over.
func (e *PixelPong) advance(a int) (reward float64, terminated bool) {
	for f := 0; f < e.frameSkip && !terminated; f++ {
		if e.sticky > 0 && e.rng.Float64() < e.sticky {
			a = e.prevMove
		}
		e.prevMove = a
		reward += e.frameStep(a)
		terminated = e.st.AgentScore >= pongWinScore || e.st.OppScore >= pongWinScore
	}
	return reward, terminated
}

// frameStep advances the game by one frame and returns the agent's reward.
func (e *PixelPong) frameStep(a int) float64 {
	s := &e.st
	switch a {
	case PongRight, PongRightFire:
		s.AgentY -= pongAgentSpeed
	case PongLeft, PongLeftFire:
		s.AgentY += pongAgentSpeed
	}
	s.AgentY = clampPaddle(s.AgentY)
	e.moveOpponent()

	if !s.BallVisible {
		e.serveWait--
		if e.serveWait <= 0 {
			e.serve()
		}
		return 0
	}
	s.BallX += s.BallVX
	s.BallY += s.BallVY
	// Walls reflect the ball.
	if s.BallY < pongFieldTop {
		s.BallY = 2*pongFieldTop - s.BallY
		s.BallVY = -s.BallVY
	} else if bottom := float64(pongFieldBottom - pongBallH); s.BallY > bottom {
		s.BallY = 2*bottom - s.BallY
		s.BallVY = -s.BallVY
	}
	// Paddles return the ball when it reaches their face while overlapping them.
	if s.BallVX > 0 && s.BallX+pongBallW >= pongAgentX && s.BallX+pongBallW-s.BallVX < pongAgentX+pongPaddleW && overlaps(s.BallY, s.AgentY) {
		e.bounce(s.AgentY, pongAgentX-pongBallW)
		e.oppWait = pongOppReaction
		e.oppAim = (2*e.rng.Float64() - 1) * pongOppAimNoise
	} else if s.BallVX < 0 && s.BallX <= pongOppX+pongPaddleW && s.BallX-s.BallVX > pongOppX && overlaps(s.BallY, s.OppY) {
		e.bounce(s.OppY, pongOppX+pongPaddleW)
	}
	switch {
	case s.BallX > PongWidth:
		s.OppScore++
		e.pause(1)
		return -1
	case s.BallX+pongBallW < 0:
		s.AgentScore++
		e.pause(-1)
		return 1
	}
	return 0
}

// overlaps reports whether a ball with top row by touches a paddle with
// top row py.
func overlaps(by, py float64) bool { return by+pongBallH > py && by < py+pongPaddleH }

// bounce sends the ball back from a paddle with top row py, its vertical
// speed set by where it hit: the further from the paddle's centre, the
// steeper the return.
func (e *PixelPong) bounce(py, x float64) {
	s := &e.st
	off := (s.BallY + pongBallH/2) - (py + pongPaddleH/2)
	half := float64(pongPaddleH+pongBallH) / 2
	s.BallVY = pongMaxBallVY * max(-1, min(1, off/half))
	s.BallVX = -s.BallVX
	s.BallX = x
}

// pause hides the ball until the next serve, which goes towards dir
// (+1: the agent's side).
func (e *PixelPong) pause(dir float64) {
	e.st.BallVisible = false
	e.serveWait = pongServeFrames
	e.serveDir = dir
}

// serve puts the ball in the middle of the field at a random height,
// heading towards the player who lost the last point at a random angle.
func (e *PixelPong) serve() {
	s := &e.st
	s.BallVisible = true
	s.BallX = float64(PongWidth-pongBallW) / 2
	s.BallY = e.uniform(pongFieldTop+40, pongFieldBottom-40-pongBallH)
	s.BallVX = pongBallVX * e.serveDir
	s.BallVY = e.uniform(0.5, 1.5)
	if e.rng.IntN(2) == 0 {
		s.BallVY = -s.BallVY
	}
	e.oppWait = 0
	e.oppAim = (2*e.rng.Float64() - 1) * pongOppAimNoise
}

// moveOpponent moves the scripted paddle at most oppSpeed pixels: towards
// the ball (plus its aiming offset) when the ball comes its way and it has
// reacted, otherwise back towards the middle.
func (e *PixelPong) moveOpponent() {
	s := &e.st
	target := float64(pongFieldTop+pongFieldBottom) / 2
	if s.BallVisible && s.BallVX < 0 {
		if e.oppWait > 0 {
			e.oppWait--
			return
		}
		target = s.BallY + pongBallH/2 + e.oppAim
	}
	d := target - (s.OppY + pongPaddleH/2)
	d = max(-e.oppSpeed, min(e.oppSpeed, d))
	s.OppY = clampPaddle(s.OppY + d)
}

func clampPaddle(y float64) float64 {
	return max(pongFieldTop, min(pongFieldBottom-pongPaddleH, y))
}

// render draws the current state into e.frame.
func (e *PixelPong) render() {
	f := e.frame
	copy(f, e.template)
	s := &e.st
	drawScore(f, 16, s.OppScore, pongOrange)
	drawScore(f, 112, s.AgentScore, pongGreen)
	oy, ay := pongRound(s.OppY), pongRound(s.AgentY)
	fillRect(f, pongOppX, oy, pongOppX+pongPaddleW, oy+pongPaddleH, pongOrange)
	fillRect(f, pongAgentX, ay, pongAgentX+pongPaddleW, ay+pongPaddleH, pongGreen)
	if s.BallVisible {
		bx, by := pongRound(s.BallX), pongRound(s.BallY)
		fillRect(f, bx, by, bx+pongBallW, by+pongBallH, pongWhite)
	}
}

// pongRound rounds half up, also below zero (int() truncates towards zero).
func pongRound(v float64) int { return int(math.Floor(v + 0.5)) }

// fillRect paints columns [x0, x1) of rows [y0, y1), clipped to the frame.
func fillRect(f []uint8, x0, y0, x1, y1 int, col [3]uint8) {
	x0, x1 = max(x0, 0), min(x1, PongWidth)
	y0, y1 = max(y0, 0), min(y1, PongHeight)
	for y := y0; y < y1; y++ {
		row := f[(y*PongWidth)*3 : (y*PongWidth+PongWidth)*3]
		for x := x0; x < x1; x++ {
			row[3*x], row[3*x+1], row[3*x+2] = col[0], col[1], col[2]
		}
	}
}

// pongDigits is a 3×5 font: bit 2 of each row is the left column.
var pongDigits = [10][5]uint8{
	{7, 5, 5, 5, 7}, {2, 6, 2, 2, 7}, {7, 1, 7, 4, 7}, {7, 1, 7, 1, 7}, {5, 5, 7, 1, 1},
	{7, 4, 7, 1, 7}, {7, 4, 7, 5, 7}, {7, 1, 1, 1, 1}, {7, 5, 7, 5, 7}, {7, 5, 7, 1, 7},
}

// Score digits are the font scaled 4× (12×20 pixels), 16 pixels apart,
// from row pongDigitTop; a score below 10 takes the right-hand slot.
const (
	pongDigitScale = 4
	pongDigitTop   = 2
	pongDigitPitch = 16
)

// drawScore draws score (0–99) with its tens slot starting at column x.
func drawScore(f []uint8, x, score int, col [3]uint8) {
	if score >= 10 {
		drawDigit(f, x, (score/10)%10, col)
	}
	drawDigit(f, x+pongDigitPitch, score%10, col)
}

func drawDigit(f []uint8, x, d int, col [3]uint8) {
	for r, bits := range pongDigits[d] {
		for c := 0; c < 3; c++ {
			if bits&(4>>c) != 0 {
				x0, y0 := x+c*pongDigitScale, pongDigitTop+r*pongDigitScale
				fillRect(f, x0, y0, x0+pongDigitScale, y0+pongDigitScale, col)
			}
		}
	}
}

// writeObs widens a frame into an observation.
func writeObs(obs []float64, f []uint8) {
	obs = obs[:len(f)]
	for i, v := range f {
		obs[i] = float64(v)
	}
}

// FramesPerStep implements FrameSkipper.
func (e *PixelPong) FramesPerStep() int { return e.frameSkip }
