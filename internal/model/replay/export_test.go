package replay

// Marshal writes interactions as the recorder writes a cassette file.
var Marshal = marshal
