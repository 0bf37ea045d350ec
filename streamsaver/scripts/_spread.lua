-- Prelude of every script that passes a table's values as one call's arguments: `spread`, an
-- unpack for any count. Lua's unpack refuses more results than its C stack holds (~8,000:
-- "too many results to unpack"), but a Lua function may return any number: beyond the limit,
-- each level returns 100 values and the rest (a call of 400,000 arguments nests 4,000 levels;
-- Lua allows 20,000). Below it, spread is unpack.

local UNPACK_MAX = 4000

local function spread(t, i, j)
  if j - i < UNPACK_MAX then return unpack(t, i, j) end
  return
    t[i], t[i + 1], t[i + 2], t[i + 3], t[i + 4], t[i + 5], t[i + 6], t[i + 7], t[i + 8], t[i + 9],
    t[i + 10], t[i + 11], t[i + 12], t[i + 13], t[i + 14], t[i + 15], t[i + 16], t[i + 17], t[i + 18], t[i + 19],
    t[i + 20], t[i + 21], t[i + 22], t[i + 23], t[i + 24], t[i + 25], t[i + 26], t[i + 27], t[i + 28], t[i + 29],
    t[i + 30], t[i + 31], t[i + 32], t[i + 33], t[i + 34], t[i + 35], t[i + 36], t[i + 37], t[i + 38], t[i + 39],
    t[i + 40], t[i + 41], t[i + 42], t[i + 43], t[i + 44], t[i + 45], t[i + 46], t[i + 47], t[i + 48], t[i + 49],
    t[i + 50], t[i + 51], t[i + 52], t[i + 53], t[i + 54], t[i + 55], t[i + 56], t[i + 57], t[i + 58], t[i + 59],
    t[i + 60], t[i + 61], t[i + 62], t[i + 63], t[i + 64], t[i + 65], t[i + 66], t[i + 67], t[i + 68], t[i + 69],
    t[i + 70], t[i + 71], t[i + 72], t[i + 73], t[i + 74], t[i + 75], t[i + 76], t[i + 77], t[i + 78], t[i + 79],
    t[i + 80], t[i + 81], t[i + 82], t[i + 83], t[i + 84], t[i + 85], t[i + 86], t[i + 87], t[i + 88], t[i + 89],
    t[i + 90], t[i + 91], t[i + 92], t[i + 93], t[i + 94], t[i + 95], t[i + 96], t[i + 97], t[i + 98], t[i + 99],
    spread(t, i + 100, j)
end
