//! The board as a PNG image, for clients that show images but not MCP Apps:
//! squares, the last move and a king in check marked, pieces as filled
//! outlines (drawn here, in a 60-unit square), files and ranks at the edges.
//! tiny-skia draws and encodes.

use cozy_chess::{Board, Color, File, Piece, Rank, Square};
use tiny_skia::{Color as Rgb, FillRule, Paint, PathBuilder, Pixmap, Rect, Stroke, Transform};

/// One square, in pixels; the border holds the coordinates.
const SQUARE: f32 = 60.0;
const BORDER: f32 = 20.0;
pub const SIZE: u32 = (8.0 * SQUARE + 2.0 * BORDER) as u32;

const LIGHT: (u8, u8, u8) = (240, 217, 181);
const DARK: (u8, u8, u8) = (181, 136, 99);
const MOVED: (u8, u8, u8) = (205, 210, 106);
const CHECK: (u8, u8, u8) = (235, 97, 80);
const FRAME: (u8, u8, u8) = (64, 48, 36);

/// What to mark besides the pieces.
pub struct Marks {
    /// The last move's squares.
    pub last_move: Option<(Square, Square)>,
    /// The king in check.
    pub check: Option<Square>,
    /// Black at the bottom.
    pub from_black: bool,
}

/// The position as a PNG.
pub fn png(board: &Board, marks: &Marks) -> Result<Vec<u8>, String> {
    let mut pixmap = Pixmap::new(SIZE, SIZE).ok_or("no room for the image")?;
    pixmap.fill(rgb(FRAME));
    for row in 0..8 {
        for col in 0..8 {
            let square = square_at(row, col, marks.from_black);
            let (x, y) = (BORDER + col as f32 * SQUARE, BORDER + row as f32 * SQUARE);
            let light = (square.file() as usize + square.rank() as usize) % 2 == 1;
            let mut shade = if light { LIGHT } else { DARK };
            if marks.last_move.is_some_and(|(from, to)| square == from || square == to) {
                shade = MOVED;
            }
            if marks.check == Some(square) {
                shade = CHECK;
            }
            let rect = Rect::from_xywh(x, y, SQUARE, SQUARE).ok_or("a square out of the image")?;
            pixmap.fill_rect(rect, &paint(shade), Transform::identity(), None);
            if let (Some(piece), Some(color)) = (board.piece_on(square), board.color_on(square)) {
                draw_piece(&mut pixmap, piece, color, x, y);
            }
        }
    }
    draw_coordinates(&mut pixmap, marks.from_black);
    pixmap.encode_png().map_err(|e| format!("encoding the image: {e}"))
}

/// The square drawn at `row` (0 at the top) and `col` (0 at the left).
pub fn square_at(row: usize, col: usize, from_black: bool) -> Square {
    let (file, rank) = if from_black { (7 - col, row) } else { (col, 7 - row) };
    Square::new(File::index(file), Rank::index(rank))
}

fn rgb((r, g, b): (u8, u8, u8)) -> Rgb {
    Rgb::from_rgba8(r, g, b, 255)
}

fn paint(shade: (u8, u8, u8)) -> Paint<'static> {
    let mut p = Paint::default();
    p.set_color(rgb(shade));
    p.anti_alias = true;
    p
}

/// A closed polygon through `points` (in the 60-unit square).
fn polygon(pb: &mut PathBuilder, points: &[(f32, f32)]) {
    let mut it = points.iter();
    if let Some(&(x, y)) = it.next() {
        pb.move_to(x, y);
        it.for_each(|&(x, y)| pb.line_to(x, y));
        pb.close();
    }
}

/// The outline of `piece` in a 60-unit square, standing on a common base.
fn outline(piece: Piece) -> Option<tiny_skia::Path> {
    let mut pb = PathBuilder::new();
    polygon(&mut pb, &[(14.0, 46.0), (46.0, 46.0), (46.0, 52.0), (14.0, 52.0)]);
    match piece {
        Piece::Pawn => {
            pb.push_circle(30.0, 21.0, 7.0);
            polygon(&mut pb, &[(21.0, 46.0), (39.0, 46.0), (34.0, 27.0), (26.0, 27.0)]);
        }
        Piece::Rook => {
            polygon(&mut pb, &[(20.0, 46.0), (40.0, 46.0), (38.0, 22.0), (22.0, 22.0)]);
            polygon(
                &mut pb,
                &[
                    (17.0, 22.0),
                    (43.0, 22.0),
                    (43.0, 12.0),
                    (37.0, 12.0),
                    (37.0, 16.0),
                    (33.0, 16.0),
                    (33.0, 12.0),
                    (27.0, 12.0),
                    (27.0, 16.0),
                    (23.0, 16.0),
                    (23.0, 12.0),
                    (17.0, 12.0),
                ],
            );
        }
        Piece::Knight => polygon(
            &mut pb,
            &[
                (19.0, 46.0),
                (42.0, 46.0),
                (40.0, 28.0),
                (35.0, 15.0),
                (29.0, 10.0),
                (27.0, 14.0),
                (19.0, 19.0),
                (14.0, 28.0),
                (17.0, 31.0),
                (22.0, 29.0),
                (27.0, 26.0),
                (22.0, 38.0),
            ],
        ),
        Piece::Bishop => {
            pb.push_circle(30.0, 10.0, 3.5);
            pb.move_to(30.0, 13.0);
            pb.cubic_to(43.0, 22.0, 40.0, 38.0, 36.0, 46.0);
            pb.line_to(24.0, 46.0);
            pb.cubic_to(20.0, 38.0, 17.0, 22.0, 30.0, 13.0);
            pb.close();
        }
        Piece::Queen => {
            polygon(
                &mut pb,
                &[
                    (18.0, 46.0),
                    (42.0, 46.0),
                    (46.0, 17.0),
                    (38.0, 31.0),
                    (34.0, 13.0),
                    (30.0, 30.0),
                    (26.0, 13.0),
                    (22.0, 31.0),
                    (14.0, 17.0),
                ],
            );
            for (x, y) in [(14.0, 15.0), (26.0, 11.0), (34.0, 11.0), (46.0, 15.0)] {
                pb.push_circle(x, y, 3.0);
            }
        }
        Piece::King => {
            polygon(&mut pb, &[(19.0, 46.0), (41.0, 46.0), (38.0, 24.0), (22.0, 24.0)]);
            polygon(
                &mut pb,
                &[
                    (28.0, 6.0),
                    (32.0, 6.0),
                    (32.0, 11.0),
                    (37.0, 11.0),
                    (37.0, 15.0),
                    (32.0, 15.0),
                    (32.0, 24.0),
                    (28.0, 24.0),
                    (28.0, 15.0),
                    (23.0, 15.0),
                    (23.0, 11.0),
                    (28.0, 11.0),
                ],
            );
        }
    }
    pb.finish()
}

fn draw_piece(pixmap: &mut Pixmap, piece: Piece, color: Color, x: f32, y: f32) {
    let Some(path) = outline(piece) else { return };
    let (fill, edge) = match color {
        Color::White => ((250, 250, 250), (30, 30, 30)),
        Color::Black => ((35, 35, 35), (235, 235, 235)),
    };
    let at = Transform::from_scale(SQUARE / 60.0, SQUARE / 60.0).post_translate(x, y);
    pixmap.fill_path(&path, &paint(fill), FillRule::Winding, at, None);
    let stroke = Stroke { width: 1.6, ..Stroke::default() };
    pixmap.stroke_path(&path, &paint(edge), &stroke, at, None);
}

/// Strokes of the letters a–h and digits 1–8 on a 4×6 grid (top left 0,0).
fn glyph(c: char) -> &'static [&'static [(f32, f32)]] {
    match c {
        'a' => &[&[(0.5, 2.0), (3.0, 2.0), (3.0, 6.0), (0.5, 6.0), (0.5, 4.0), (3.0, 4.0)]],
        'b' => &[&[(0.5, 0.0), (0.5, 6.0), (3.0, 6.0), (3.0, 3.0), (0.5, 3.0)]],
        'c' => &[&[(3.0, 3.0), (0.5, 3.0), (0.5, 6.0), (3.0, 6.0)]],
        'd' => &[&[(3.0, 0.0), (3.0, 6.0), (0.5, 6.0), (0.5, 3.0), (3.0, 3.0)]],
        'e' => &[&[(3.0, 6.0), (0.5, 6.0), (0.5, 2.5), (3.0, 2.5), (3.0, 4.2), (0.5, 4.2)]],
        'f' => &[&[(3.0, 0.5), (1.5, 0.5), (1.5, 6.0)], &[(0.3, 2.8), (2.8, 2.8)]],
        'g' => &[&[(3.0, 4.5), (0.5, 4.5), (0.5, 2.5), (3.0, 2.5), (3.0, 7.0), (0.5, 7.0)]],
        'h' => &[&[(0.5, 0.0), (0.5, 6.0)], &[(0.5, 3.0), (3.0, 3.0), (3.0, 6.0)]],
        '1' => &[&[(1.0, 1.0), (2.0, 0.0), (2.0, 6.0)], &[(1.0, 6.0), (3.0, 6.0)]],
        '2' => &[&[(0.5, 0.0), (3.0, 0.0), (3.0, 3.0), (0.5, 3.0), (0.5, 6.0), (3.0, 6.0)]],
        '3' => &[&[(0.5, 0.0), (3.0, 0.0), (3.0, 6.0), (0.5, 6.0)], &[(1.0, 3.0), (3.0, 3.0)]],
        '4' => &[&[(0.5, 0.0), (0.5, 3.0), (3.0, 3.0)], &[(3.0, 0.0), (3.0, 6.0)]],
        '5' => &[&[(3.0, 0.0), (0.5, 0.0), (0.5, 3.0), (3.0, 3.0), (3.0, 6.0), (0.5, 6.0)]],
        '6' => &[&[(3.0, 0.0), (0.5, 0.0), (0.5, 6.0), (3.0, 6.0), (3.0, 3.0), (0.5, 3.0)]],
        '7' => &[&[(0.5, 0.0), (3.0, 0.0), (1.5, 6.0)]],
        '8' => &[&[(0.5, 0.0), (3.0, 0.0), (3.0, 6.0), (0.5, 6.0), (0.5, 0.0)], &[(0.5, 3.0), (3.0, 3.0)]],
        _ => &[],
    }
}

/// Files under the board and ranks left of it, as the player sees them.
fn draw_coordinates(pixmap: &mut Pixmap, from_black: bool) {
    let stroke = Stroke { width: 1.4, ..Stroke::default() };
    let ink = paint((230, 220, 200));
    let mut label = |c: char, cx: f32, cy: f32| {
        let mut pb = PathBuilder::new();
        for line in glyph(c) {
            let mut points = line.iter();
            if let Some(&(x, y)) = points.next() {
                pb.move_to(x, y);
                points.for_each(|&(x, y)| pb.line_to(x, y));
            }
        }
        if let Some(path) = pb.finish() {
            // The 4×6 grid at twice its size, centred on (cx, cy).
            let at = Transform::from_scale(2.0, 2.0).post_translate(cx - 3.5, cy - 6.0);
            pixmap.stroke_path(&path, &ink, &stroke, at, None);
        }
    };
    for i in 0..8 {
        let along = BORDER + (i as f32 + 0.5) * SQUARE;
        let file = if from_black { 7 - i } else { i };
        let rank = if from_black { i } else { 7 - i };
        label((b'a' + file as u8) as char, along, BORDER + 8.0 * SQUARE + BORDER / 2.0 - 1.0);
        label((b'1' + rank as u8) as char, BORDER / 2.0, along);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pixel(png: &[u8], x: u32, y: u32) -> (u8, u8, u8) {
        let pixmap = Pixmap::decode_png(png).unwrap();
        let p = pixmap.pixel(x, y).unwrap();
        (p.red(), p.green(), p.blue())
    }

    /// The centre of the square drawn at (row, col), and a point near its corner.
    fn centre(row: u32, col: u32) -> (u32, u32) {
        (BORDER as u32 + col * 60 + 30, BORDER as u32 + row * 60 + 30)
    }

    #[test]
    fn the_start_position_has_its_squares_and_pieces_where_they_belong() {
        let marks = Marks { last_move: None, check: None, from_black: false };
        let png = png(&Board::default(), &marks).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        let pixmap = Pixmap::decode_png(&png).unwrap();
        assert_eq!((pixmap.width(), pixmap.height()), (SIZE, SIZE));
        // a1 (bottom left) is dark, h1 light; a corner of each shows the square's colour.
        assert_eq!(pixel(&png, BORDER as u32 + 2, BORDER as u32 + 7 * 60 + 2), DARK);
        assert_eq!(pixel(&png, BORDER as u32 + 7 * 60 + 2, BORDER as u32 + 7 * 60 + 2), LIGHT);
        // A white piece's body on rank 1, a black one's on rank 8, nothing on e4.
        let (x, y) = centre(7, 4);
        assert_eq!(pixel(&png, x, y + 10), (250, 250, 250), "the white king's body");
        let (x, y) = centre(0, 3);
        assert_eq!(pixel(&png, x, y + 10), (35, 35, 35), "the black queen's body");
        let (x, y) = centre(4, 4);
        assert_eq!(pixel(&png, x, y), LIGHT, "e4 is empty and light");
    }

    #[test]
    fn from_black_the_board_turns_and_the_last_move_and_check_are_marked() {
        let board: Board = "rnbqkbnr/ppppp2p/5p2/6pQ/4P3/8/PPPP1PPP/RNB1KBNR b KQkq - 1 3".parse().unwrap();
        let h5 = Square::new(File::H, Rank::Fifth);
        let marks = Marks { last_move: Some((Square::new(File::D, Rank::First), h5)), check: Some(Square::E8), from_black: true };
        let png = png(&board, &marks).unwrap();
        // From Black, e8 is on the bottom row, fourth from the left; h5 on the fifth row from the top, first column.
        assert_eq!((square_at(7, 3, true), square_at(4, 0, true)), (Square::E8, h5));
        assert_eq!(pixel(&png, BORDER as u32 + 3 * 60 + 2, BORDER as u32 + 7 * 60 + 2), CHECK);
        assert_eq!(pixel(&png, BORDER as u32 + 2, BORDER as u32 + 4 * 60 + 2), MOVED);
    }
}
