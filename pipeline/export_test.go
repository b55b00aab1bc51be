package pipeline

// DecodeEpisode is decodeEpisode, for the external tests.
var DecodeEpisode = decodeEpisode
